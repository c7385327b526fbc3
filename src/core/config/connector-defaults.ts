/**
 * Settings the command line gives every connector of a job that does not set its own, by
 * connector family (`kafka`: the cluster's bootstrap list, TLS and SASL). They are held in memory
 * only: the job master hands them to its worker threads with their start-up data (WorkerInit),
 * never through the job's config, a checkpoint or the REST API, because they may hold secrets.
 * Values must survive a structured clone (plain data, no functions).
 */
export type ConnectorDefaults = Readonly<Record<string, unknown>>;

let current: ConnectorDefaults = {};

/** Replaces the defaults of this thread (the CLI, and every worker at start-up). */
export function setConnectorDefaults(defaults: ConnectorDefaults): void {
  current = { ...defaults };
}

/** The defaults of this thread, to hand to a new worker. */
export function connectorDefaults(): ConnectorDefaults {
  return current;
}

/** One connector family's defaults, undefined when none were given. */
export function connectorDefault(family: string): unknown {
  return current[family];
}
