import type { DeadLetterRecord } from '../functions/dead-letter.ts';
import type { Sink } from './sink.ts';

/** Where a source's or an operator's dead letters go, for the job's graph to connect. */
export interface DeadLetterRoute {
  topic: string;
  /**
   * Whose transactions they join: undefined, the job's exactly-once sink that takes dead letters
   * when it has exactly one (else their own sink); a uid, that sink; false, none (the policy has
   * connection or delivery settings of its own).
   */
  joinSink: string | false | undefined;
  /** The sink of their own, when they join none. */
  ownSink: Sink<DeadLetterRecord>;
}
