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
}

/** Connectors (sources and sinks) may check their settings and their external system before the job starts. */
export interface Preflightable {
  preflight?(context: PreflightContext): Promise<PreflightFinding[]>;
}
