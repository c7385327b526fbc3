import type { EnvironmentConfig } from '../config/environment-config.ts';

/** One thing the preflight found: errors stop the job before it starts, warnings are printed. */
export interface PreflightFinding {
  level: 'error' | 'warning';
  /** The operator it is about. */
  where: string;
  message: string;
  hint?: string;
}

/** What a connector's preflight knows of the job around it. */
export interface PreflightContext {
  jobName: string;
  /** The connector's operator uid. */
  uid: string;
  config: EnvironmentConfig;
  /** Whether the job has an exactly-once sink. */
  exactlyOnce: boolean;
  /**
   * The job's previous run that ended without its job's end (its checkpoint storage's lock was
   * taken over from it, as a process that is gone): the transactions open under this job's ids are
   * that run's, lingering, for the start to end; no live job's to watch for.
   */
  predecessorGone?: string | undefined;
}

/** A name a connector must have to itself within its job (a Kafka sink's transactional id prefix). */
export interface ExclusiveClaim {
  /** What the name is, e.g. `transactional id prefix`. */
  what: string;
  name: string;
  /** The setting that changes it, named in the error. */
  setting: string;
}

/** Connectors (sources and sinks) may check their settings and their external system before the job starts. */
export interface Preflightable {
  preflight?(context: PreflightContext): Promise<PreflightFinding[]>;
  /** The names this connector needs to itself: the preflight refuses two connectors of a job that claim the same one. */
  exclusiveClaims?(context: Pick<PreflightContext, 'jobName' | 'uid'>): ExclusiveClaim[];
}
