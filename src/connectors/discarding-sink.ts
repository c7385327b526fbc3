import type { Sink } from '../core/connector/sink.ts';
import { StreamOperator } from '../core/operator/stream-operator.ts';

class DiscardingOperator<T> extends StreamOperator<T, never> {
  processBatch(): never[] {
    return [];
  }
}

/** Drops every record (Flink's DiscardingSink): for benchmarks and tests of everything before the sink. */
export function discardingSink<T>(): Sink<T> {
  return { name: 'discarding sink', deliveryGuarantee: 'none', createOperator: () => new DiscardingOperator<T>() };
}
