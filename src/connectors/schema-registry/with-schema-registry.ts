import type { Preflightable, PreflightContext, PreflightFinding } from '../../core/connector/preflight.ts';

/** What the registry checks of a serializer or deserializer at start. */
export interface RegistryChecked {
  preflight(where: string): Promise<PreflightFinding[]>;
}

/**
 * A Kafka source or sink whose preflight also checks the registry formats it uses: the registry
 * answers (a registry down at start is one clear error, before the job starts), and a serializer's
 * subject holds its schema (unless autoRegister) under a compatibility rule that accepts it,
 * naming the subject and the rule otherwise. `withSchemaRegistry(kafkaSink({ ..., serializer }),
 * orderAvro)`.
 */
export function withSchemaRegistry<C extends Preflightable & { name?: string; withDeadLetters?: (topics: readonly string[]) => unknown }>(
  connector: C,
  ...formats: RegistryChecked[]
): C {
  const wrapped: C = {
    ...connector,
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
