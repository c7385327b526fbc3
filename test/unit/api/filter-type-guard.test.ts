/** `filter` with a type guard narrows the stream's type (checked by `npm run typecheck`, which compiles this file). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { dataGenSource } from '../../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../../src/connectors/discarding-sink.ts';
import { FilterOperator } from '../../../src/runtime/operators/stateless-operators.ts';
import { OperatorHarness } from '../runtime/operators/operator-harness.ts';

type Payment = { kind: 'paid'; amount: number } | { kind: 'refused'; reason: string };
const isPaid = (payment: Payment): payment is Extract<Payment, { kind: 'paid' }> => payment.kind === 'paid';

test('a type guard in filter narrows what follows; a plain predicate keeps the type', async () => {
  const env = new StreamExecutionEnvironment();
  const payments = env.fromSource(dataGenSource<Payment>({ count: 1, generate: () => ({ kind: 'paid', amount: 1 }) }));
  // Narrowed: `amount` is there without a cast.
  payments
    .filter(isPaid)
    .map((paid) => paid.amount * 2)
    .sinkTo(discardingSink<number>());
  // @ts-expect-error a plain predicate does not narrow: `amount` is not on every Payment
  payments.filter((payment): boolean => payment.kind === 'paid').map((payment) => payment.amount);
  const harness = await new OperatorHarness(new FilterOperator<Payment>(isPaid)).open();
  const out = await harness.process([
    { kind: 'paid', amount: 3 },
    { kind: 'refused', reason: 'card' },
  ]);
  assert.deepEqual(out.records, [{ kind: 'paid', amount: 3 }]);
});
