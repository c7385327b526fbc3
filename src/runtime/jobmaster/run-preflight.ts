import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import type { Preflightable, PreflightFinding } from '../../core/connector/preflight.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import type { StreamGraph } from '../../graph/stream-graph.ts';

/**
 * The checks run when a job starts (and by `weir doctor`): the four things users get wrong with
 * exactly-once — checkpointing off, a sink that is not exactly-once, readers that are not
 * read_committed, and transaction timeouts the broker will not honour or that a checkpoint plus
 * a recovery outlives — plus whatever each connector checks of its own.
 */
export async function runPreflight(
  jobName: string,
  graph: StreamGraph,
  jobGraph: JobGraph,
  config: EnvironmentConfig,
  options: { predecessorGone?: string | undefined } = {},
): Promise<PreflightFinding[]> {
  const findings: PreflightFinding[] = [];
  const exactlyOnce = graph.nodes.some((node) => node.kind === 'sink' && node.sink.deliveryGuarantee === 'exactly-once');
  for (const node of graph.nodes) {
    if (node.kind === 'sink' && node.sink.deliveryGuarantee === 'exactly-once' && config.checkpointing === undefined) {
      findings.push({
        level: 'error',
        where: node.name,
        message: `sink "${node.name}" is exactly-once, but checkpointing is off: it would never commit its output`,
        hint: "set checkpointing: { interval: '1s', storage: '<folder>' } in the job's config, or make the sink at-least-once",
      });
    }
    if (exactlyOnce && config.checkpointing?.mode === 'at-least-once') {
      findings.push({
        level: 'warning',
        where: node.name,
        message:
          'checkpointing.mode is at-least-once: barriers are not aligned, so after a failure both state and the output of the exactly-once sinks may hold records twice (records that overtook barrier N on a faster input go into checkpoint N and are read again after a restore from it)',
        hint: "set checkpointing.mode: 'exactly-once' for exact state and output",
      });
      break;
    }
  }
  const claimed = new Map<string, string>();
  for (const node of graph.nodes) {
    const connector = node.kind === 'source' ? (node.source as Preflightable) : node.kind === 'sink' ? (node.sink as Preflightable) : undefined;
    const uid = jobGraph.nodes[node.id]?.uid ?? node.uid;
    for (const claim of connector?.exclusiveClaims?.({ jobName, uid }) ?? []) {
      const key = `${claim.what}\u0000${claim.name}`;
      const other = claimed.get(key);
      if (other === undefined) {
        claimed.set(key, node.name);
        continue;
      }
      findings.push({
        level: 'error',
        where: node.name,
        message: `"${other}" and "${node.name}" use the same ${claim.what} "${claim.name}": each would fence (abort) the other's transactions`,
        hint: `give one of them its own ${claim.setting}`,
      });
    }
    if (connector?.preflight === undefined) continue;
    findings.push(...(await connector.preflight({ jobName, uid, config, exactlyOnce, predecessorGone: options.predecessorGone })));
  }
  return findings;
}

/** Prints the warnings and throws one error naming every problem when there is any. */
export function enforcePreflight(findings: readonly PreflightFinding[], log: (line: string) => void): void {
  for (const finding of findings) if (finding.level === 'warning') log(`warning: ${finding.message}${finding.hint ? ` (${finding.hint})` : ''}`);
  const errors = findings.filter((finding) => finding.level === 'error');
  if (errors.length === 0) return;
  if (errors.length === 1) {
    const [only] = errors as [PreflightFinding];
    throw new WeirError('PREFLIGHT_FAILED', only.message, { hint: only.hint });
  }
  throw new WeirError(
    'PREFLIGHT_FAILED',
    `the job cannot start safely:\n${errors.map((error) => `  - ${error.message}${error.hint ? ` (fix: ${error.hint})` : ''}`).join('\n')}`,
    {
      hint: 'fix each setting named above',
    },
  );
}
