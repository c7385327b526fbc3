/**
 * A savepoint that stops the job (Flink's stop-with-savepoint): the sources emit nothing after its
 * barrier ('suspend'); with 'drain' they first send the end-of-event-time watermark, so every
 * event-time window and timer fires and its output is in the savepoint's transactions.
 */
export type StopMode = 'suspend' | 'drain';
