/** What a valve (or a source's watermark multiplexer) tells its task to emit, in order. */
export type WatermarkEvent = { kind: 'watermark'; watermark: number } | { kind: 'idle' } | { kind: 'active' };

interface InputChannelStatus {
  watermark: number;
  idle: boolean;
  /** Whether the channel's watermark counts in the minimum: false after it was idle, until it catches up with the output. */
  aligned: boolean;
  ended: boolean;
}

/**
 * The watermark of a task with several input channels (Flink's StatusWatermarkValve): the minimum
 * of the channels' watermarks, leaving out channels that are idle, and channels that came back from
 * idleness with a watermark behind the output until they catch up. It only ever rises. When every
 * channel is idle the task's output is idle too (after the highest watermark of its channels has
 * gone out, as in Flink); the first channel active again makes it active. A channel whose input
 * ended counts as done: out of the minimum, and not holding the output active; once every channel
 * has ended, the output is +Infinity (the end of event time).
 *
 * Each call appends what the task must emit to `out`.
 */
export class StatusWatermarkValve {
  readonly #channels: InputChannelStatus[];
  #lastOutput = Number.NEGATIVE_INFINITY;
  #idle = false;

  constructor(channelCount: number) {
    this.#channels = Array.from({ length: channelCount }, () => ({ watermark: Number.NEGATIVE_INFINITY, idle: false, aligned: true, ended: false }));
  }

  /** The watermark last emitted (-Infinity before the first). */
  get currentWatermark(): number {
    return this.#lastOutput;
  }

  /** Whether the output is idle. */
  get isIdle(): boolean {
    return this.#idle;
  }

  inputWatermark(channel: number, watermark: number, out: WatermarkEvent[]): void {
    const status = this.#channels[channel] as InputChannelStatus;
    if (status.idle || status.ended || watermark <= status.watermark) return;
    status.watermark = watermark;
    if (!status.aligned && watermark >= this.#lastOutput) status.aligned = true;
    this.#outputMinimum(out);
  }

  inputWatermarkStatus(channel: number, idle: boolean, out: WatermarkEvent[]): void {
    const status = this.#channels[channel] as InputChannelStatus;
    if (status.ended || status.idle === idle) return;
    status.idle = idle;
    if (idle) {
      status.aligned = false;
      if (this.#allIdle()) {
        this.#outputMaximum(out);
        this.#idle = true;
        out.push({ kind: 'idle' });
      } else {
        this.#outputMinimum(out); // it may have held the minimum back
      }
      return;
    }
    status.aligned = status.watermark >= this.#lastOutput;
    if (this.#idle) {
      this.#idle = false;
      out.push({ kind: 'active' });
    }
  }

  /** The channel's input ended: nothing more comes on it. */
  endOfInput(channel: number, out: WatermarkEvent[]): void {
    const status = this.#channels[channel] as InputChannelStatus;
    if (status.ended) return;
    status.ended = true;
    status.idle = false;
    status.aligned = false;
    if (this.#channels.every((candidate) => candidate.ended)) {
      if (this.#idle) {
        this.#idle = false;
        out.push({ kind: 'active' });
      }
      this.#emit(Number.POSITIVE_INFINITY, out);
      return;
    }
    if (this.#allIdle()) {
      if (!this.#idle) {
        this.#outputMaximum(out);
        this.#idle = true;
        out.push({ kind: 'idle' });
      }
      return;
    }
    this.#outputMinimum(out);
  }

  /** Whether every channel that has not ended is idle (and at least one has not ended). */
  #allIdle(): boolean {
    let open = 0;
    for (const status of this.#channels) {
      if (status.ended) continue;
      if (!status.idle) return false;
      open++;
    }
    return open > 0;
  }

  #outputMinimum(out: WatermarkEvent[]): void {
    let minimum = Number.POSITIVE_INFINITY;
    let any = false;
    for (const status of this.#channels) {
      if (status.ended || status.idle || !status.aligned) continue;
      any = true;
      if (status.watermark < minimum) minimum = status.watermark;
    }
    if (any) this.#emit(minimum, out);
  }

  #outputMaximum(out: WatermarkEvent[]): void {
    let maximum = Number.NEGATIVE_INFINITY;
    for (const status of this.#channels) if (!status.ended && status.watermark > maximum) maximum = status.watermark;
    this.#emit(maximum, out);
  }

  #emit(watermark: number, out: WatermarkEvent[]): void {
    if (watermark <= this.#lastOutput) return;
    this.#lastOutput = watermark;
    for (const status of this.#channels) if (!status.aligned && !status.idle && !status.ended && status.watermark >= watermark) status.aligned = true;
    out.push({ kind: 'watermark', watermark });
  }
}
