import type { Preflightable, PreflightContext, PreflightFinding } from '../../core/connector/preflight.ts';

/** What the registry checks of a serializer or deserializer at start. */
export interface RegistryChecked {
  preflight(where: string): Promise<PreflightFinding[]>;
  /** What a format looks up before its first record (a serializer: its schema's id): awaited as the connector's operator opens. */
  beforeFirstRecord?(): Promise<unknown>;
}

/** An operator whose open first awaits the formats' preparation (in its own thread: a worker loads the job anew). */
function preparedFirst<O extends { open(context: never): unknown }>(operator: O, formats: readonly RegistryChecked[]): O {
  const open = operator.open.bind(operator);
  operator.open = (async (context: never) => {
    for (const format of formats) await format.beforeFirstRecord?.();
    return open(context);
  }) as O['open'];
  return operator;
}

/**
 * A Kafka source or sink whose preflight also checks the registry formats it uses: the registry
 * answers (a registry down at start is one clear error, before the job starts), and a serializer's
 * subject holds its schema (unless autoRegister) under a compatibility rule that accepts it,
 * naming the subject and the rule otherwise; and a serializer's id is looked up as the sink's
 * operator opens in its worker thread, so no record waits on the registry. `withSchemaRegistry(kafkaSink({ ..., serializer }),
 * orderAvro)`.
 */
export function withSchemaRegistry<
  C extends Preflightable & {
    name?: string;
    withDeadLetters?: (topics: readonly string[]) => unknown;
    createOperator?: () => { open(context: never): unknown };
    createTaskOperator?: (transaction: never) => { open(context: never): unknown };
  },
>(connector: C, ...formats: RegistryChecked[]): C {
  const { createOperator, createTaskOperator } = connector;
  const wrapped: C = {
    ...connector,
    ...(createOperator === undefined ? {} : { createOperator: () => preparedFirst(createOperator.call(connector), formats) }),
    ...(createTaskOperator === undefined
      ? {}
      : { createTaskOperator: (transaction: never) => preparedFirst(createTaskOperator.call(connector, transaction), formats) }),
    async preflight(context: PreflightContext): Promise<PreflightFinding[]> {
      const own = (await connector.preflight?.(context)) ?? [];
      const where = `${connector.name ?? 'connector'} "${context.uid}"`;
      const checked: PreflightFinding[] = [];
      for (const format of formats) checked.push(...(await format.preflight(where)));
      return [...own, ...checked];
    },
  };
  // The job may swap a sink for the same sink writing dead letters too: that one is checked as well.
  if (typeof connector.withDeadLetters === 'function') {
    const withDeadLetters = connector.withDeadLetters.bind(connector);
    wrapped.withDeadLetters = (topics: readonly string[]) => withSchemaRegistry(withDeadLetters(topics) as C, ...formats);
  }
  return wrapped;
}
