import type { StreamOperator } from '../operator/stream-operator.ts';

export type DeliveryGuarantee = 'exactly-once' | 'at-least-once' | 'none';

export interface Sink<IN> {
  readonly name: string;
  readonly deliveryGuarantee: DeliveryGuarantee;
  createOperator(): StreamOperator<IN, never>;
}
