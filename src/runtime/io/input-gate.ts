import type { ChannelMessage } from './channel-message.ts';

/**
 * The input channels of one task, as one queue in arrival order (Flink's InputGate). A channel can
 * be blocked (the barrier handler blocks a channel that delivered barrier N until every channel
 * has): its messages are held back, in order, and go first once consumption resumes.
 */
export class InputGate {
  readonly #queue: ChannelMessage[] = [];
  readonly #blocked = new Set<number>();
  #held: ChannelMessage[] = [];

  push(message: ChannelMessage): void {
    this.#queue.push(message);
  }

  /** The next message of a channel that is not blocked, or undefined when there is none. */
  poll(): ChannelMessage | undefined {
    for (;;) {
      const message = this.#queue.shift();
      if (message === undefined || !this.#blocked.has(message.channel)) return message;
      this.#held.push(message);
    }
  }

  /** Messages that go before everything queued (a restored checkpoint's channel state, replayed before new input). */
  recover(messages: readonly ChannelMessage[]): void {
    if (messages.length > 0) this.#queue.unshift(...messages);
  }

  /**
   * The barrier of an unaligned checkpoint overtakes the queue (Flink's priority event): for every
   * channel not in `done`, `onRecords` gets its records messages queued ahead of its barrier of
   * `checkpointId` (all of them when that barrier has not arrived), in order; those records stay
   * queued, to be processed as usual. The barriers of `checkpointId` found leave the queue; their
   * channels are returned. Held messages are not looked at: they came after their channel's barrier.
   */
  overtake(checkpointId: number, done: ReadonlySet<number>, onRecords: (message: Extract<ChannelMessage, { kind: 'records' }>) => void): Set<number> {
    const found = new Set<number>();
    const queue = this.#queue;
    let kept = 0;
    for (let i = 0; i < queue.length; i++) {
      const message = queue[i] as ChannelMessage;
      const channel = message.channel;
      if (!done.has(channel) && !found.has(channel)) {
        if (message.kind === 'records') onRecords(message);
        else if (message.kind === 'barrier' && message.location.checkpointId === checkpointId) {
          found.add(channel);
          continue;
        }
      }
      queue[kept++] = message;
    }
    queue.length = kept;
    return found;
  }

  blockConsumption(channel: number): void {
    this.#blocked.add(channel);
  }

  /** Unblocks every channel: what they held comes before everything queued since. */
  resumeConsumption(): void {
    this.#blocked.clear();
    if (this.#held.length > 0) {
      this.#queue.unshift(...this.#held);
      this.#held = [];
    }
  }

  isBlocked(channel: number): boolean {
    return this.#blocked.has(channel);
  }

  /** Messages waiting, held ones included. */
  get size(): number {
    return this.#queue.length + this.#held.length;
  }
}
