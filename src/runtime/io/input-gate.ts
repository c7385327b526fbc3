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
