import type { StreamOperator } from '../runtime/stream-operator.ts';

export type DeliveryGuarantee = 'exactly-once' | 'at-least-once' | 'none';

export interface Sink<IN> {
  readonly name: string;
  readonly deliveryGuarantee: DeliveryGuarantee;
  createOperator(): StreamOperator<IN, never>;
}
