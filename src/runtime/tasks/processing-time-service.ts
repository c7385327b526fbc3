/**
 * Processing-time callbacks of a task's operators (Flink's ProcessingTimeService): each operator
 * holds at most one callback, for the earliest time it needs; when it is due, the task gets a mail
 * and calls the operator on its own loop.
 */
export class ProcessingTimeService {
  readonly #onTime: (operatorIndex: number) => void;
  readonly #requests = new Map<number, { at: number; handle: NodeJS.Timeout }>();

  constructor(onTime: (operatorIndex: number) => void) {
    this.#onTime = onTime;
  }

  /** Asks for a callback of operator `operatorIndex` at `timestamp`; a later request than one already held changes nothing. */
  requestCallback(operatorIndex: number, timestamp: number): void {
    const requested = this.#requests.get(operatorIndex);
    if (requested !== undefined) {
      if (requested.at <= timestamp) return;
      clearTimeout(requested.handle);
    }
    const handle = setTimeout(() => this.#onTime(operatorIndex), Math.max(0, timestamp - Date.now()));
    this.#requests.set(operatorIndex, { at: timestamp, handle });
  }

  /** The callback of `operatorIndex` ran: the operator may ask again. */
  fired(operatorIndex: number): void {
    this.#requests.delete(operatorIndex);
  }

  close(): void {
    for (const request of this.#requests.values()) clearTimeout(request.handle);
    this.#requests.clear();
  }
}
