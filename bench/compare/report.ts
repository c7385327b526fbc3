/**
 * The side-by-side benchmark's report: a Markdown table of every run, the ratios Weir/Flink,
 * Weir/Kafka Streams and Weir/raw per metric, and an SVG chart.
 */
import type { Audit } from './kafka-io.ts';
import { SYSTEM_LABELS, type SystemName } from './systems.ts';

export interface CaseResult {
  system: SystemName;
  parallelism: number;
  intervalMs: number;
  kill: boolean;
  label: string;
  records: number;
  /** ok; void: the audit found wrong output; failed: the run did not finish. */
  status: 'ok' | 'void' | 'failed';
  error?: string;
  /** Backlog records / (start to the last one visible), records/s. */
  throughput?: number;
  /** The output's write rate between 10% and 90% of the backlog, records/s. */
  steadyThroughput?: number;
  p50Ms?: number;
  p99Ms?: number;
  peakRssMb?: number;
  /** CPU seconds (user + system) of the process, both incarnations when killed. */
  cpuSeconds?: number;
  firstOutputMs?: number;
  recoveryMs?: number;
  /** Input records written in all (backlog, live, kill phases). */
  total?: number;
  audit?: Audit;
}

export interface ReportMeta {
  date: string;
  command: string;
  seconds: number;
  records: number;
  rate: number;
  latencySeconds: number;
  partitions: number;
  node: string;
  jvmOptions: string[];
}

interface Metric {
  name: string;
  unit: string;
  value: (result: CaseResult) => number | undefined;
  /** Whether a higher value is better (for the reader of the ratios). */
  higherIsBetter: boolean;
}

const METRICS: Metric[] = [
  { name: 'throughput, whole run', unit: 'records/s', value: (r) => r.throughput, higherIsBetter: true },
  { name: 'throughput, steady state', unit: 'records/s', value: (r) => r.steadyThroughput, higherIsBetter: true },
  { name: 'p50 visibility latency', unit: 'ms', value: (r) => r.p50Ms, higherIsBetter: false },
  { name: 'p99 visibility latency', unit: 'ms', value: (r) => r.p99Ms, higherIsBetter: false },
  { name: 'peak RSS', unit: 'MB', value: (r) => r.peakRssMb, higherIsBetter: false },
  { name: 'time to first output', unit: 'ms', value: (r) => r.firstOutputMs, higherIsBetter: false },
  { name: 'recovery after SIGKILL', unit: 'ms', value: (r) => r.recoveryMs, higherIsBetter: false },
];

const SYSTEM_ORDER: SystemName[] = ['weir', 'flink', 'kafka-streams', 'raw'];
const COLORS: Record<SystemName, string> = { weir: '#2b6cb0', flink: '#dd6b20', 'kafka-streams': '#38a169', raw: '#718096' };

/** A Markdown table with padded columns, as the repository's formatter (biome) writes them. */
export function markdownTable(header: string[], rows: string[][]): string[] {
  const widths = header.map((cell, column) => Math.max(3, [...cell].length, ...rows.map((row) => [...(row[column] ?? '')].length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell + ' '.repeat((widths[column] as number) - [...cell].length)).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)];
}

const number = (value: number | undefined) => (value === undefined ? '–' : Math.round(value).toLocaleString('en'));
const intervalText = (ms: number) => (ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);

/** Settings (parallelism, interval) in the order they ran. */
function settingsOf(results: CaseResult[]): { parallelism: number; intervalMs: number }[] {
  const seen = new Map<string, { parallelism: number; intervalMs: number }>();
  for (const result of results) {
    if (result.system === 'raw') continue;
    seen.set(`${result.parallelism}/${result.intervalMs}`, { parallelism: result.parallelism, intervalMs: result.intervalMs });
  }
  if (seen.size === 0) for (const result of results) seen.set(`${result.parallelism}/-`, { parallelism: result.parallelism, intervalMs: result.intervalMs });
  return [...seen.values()];
}

/** The run of a system at a setting; the raw pipe has no interval, its run at the same parallelism serves every interval. */
function find(results: CaseResult[], system: SystemName, parallelism: number, intervalMs: number): CaseResult | undefined {
  return results.find((r) => r.system === system && r.parallelism === parallelism && (system === 'raw' || r.intervalMs === intervalMs));
}

/** A metric's value, or undefined for a void or failed run (wrong output is never a number). */
function valid(result: CaseResult | undefined, metric: Metric): number | undefined {
  return result !== undefined && result.status === 'ok' ? metric.value(result) : undefined;
}

export function renderMarkdown(meta: ReportMeta, results: CaseResult[]): string {
  const lines: string[] = [];
  lines.push(`# Side-by-side benchmark: Weir, Apache Flink, Kafka Streams, raw client pipe`);
  lines.push('');
  lines.push(
    `Generated ${meta.date} by \`${meta.command}\` in ${Math.round(meta.seconds)} s (Node ${meta.node}; JVM options: ${meta.jvmOptions.length === 0 ? 'none, JVM ergonomics' : meta.jvmOptions.join(' ')}). ` +
      `Job: read (read_committed), parse JSON, keyBy, running count per key (1,000 keys), write; exactly-once except the raw pipe. ` +
      `${meta.records.toLocaleString('en')} backlog records across ${meta.partitions} partitions per run; latency at ${meta.rate.toLocaleString('en')} records/s for ${meta.latencySeconds} s. ` +
      'Method and caveats: docs/benchmarks.md.',
  );
  lines.push('');
  const ordered = [...results].sort(
    (a, b) =>
      a.parallelism - b.parallelism ||
      (a.system === 'raw' ? 1 : 0) - (b.system === 'raw' ? 1 : 0) ||
      b.intervalMs - a.intervalMs ||
      SYSTEM_ORDER.indexOf(a.system) - SYSTEM_ORDER.indexOf(b.system),
  );
  const rows = ordered.map((r) => {
    const ok = r.status === 'ok';
    const cell = (value: number | undefined) => (ok ? number(value) : r.status === 'void' ? 'void' : 'failed');
    const audit =
      r.audit === undefined
        ? r.status === 'failed'
          ? `failed: ${(r.error ?? '').replace(/\|/g, '/').slice(0, 120)}`
          : '–'
        : r.audit.ok
          ? `exact (${r.audit.records.toLocaleString('en')} records)`
          : `VOID: ${r.audit.duplicates} duplicates, ${r.audit.missing} missing, ${r.audit.wrongCounts} wrong counts`;
    return [
      SYSTEM_LABELS[r.system],
      String(r.parallelism),
      r.system === 'raw' ? 'none' : intervalText(r.intervalMs),
      cell(r.throughput),
      cell(r.steadyThroughput),
      cell(r.p50Ms),
      cell(r.p99Ms),
      cell(r.peakRssMb),
      cell(r.firstOutputMs),
      r.kill ? cell(r.recoveryMs) : r.system === 'raw' ? 'n/a' : 'not killed',
      ok && r.cpuSeconds !== undefined ? r.cpuSeconds.toFixed(1) : '–',
      audit,
    ];
  });
  lines.push(
    ...markdownTable(
      [
        'system',
        'parallelism',
        'interval',
        'records/s (whole run)',
        'records/s (steady)',
        'p50 latency ms',
        'p99 latency ms',
        'peak RSS MB',
        'first output ms',
        'recovery ms',
        'CPU s',
        'audit',
      ],
      rows,
    ),
  );
  lines.push('');
  lines.push('## Ratios');
  lines.push('');
  lines.push(
    "Weir's value divided by the other system's, at the same parallelism and interval (the raw pipe has no interval: its run at the same parallelism). " +
      'Above 1 is better for Weir for throughput; below 1 is better for Weir for latency, memory and times. – : a side has no valid number (void, failed, not killed or not applicable).',
  );
  lines.push('');
  const settings = settingsOf(results);
  const ratioRows = METRICS.map((metric) => [
    `${metric.name} (${metric.higherIsBetter ? 'higher' : 'lower'} is better)`,
    ...settings.map((s) => {
      const weir = valid(find(results, 'weir', s.parallelism, s.intervalMs), metric);
      return (['flink', 'kafka-streams', 'raw'] as SystemName[])
        .map((other) => {
          const value = valid(find(results, other, s.parallelism, s.intervalMs), metric);
          return weir === undefined || value === undefined || value === 0 ? '–' : (weir / value).toFixed(2);
        })
        .join(' · ');
    }),
  ]);
  lines.push(
    ...markdownTable(['metric', ...settings.map((s) => `p${s.parallelism}, ${intervalText(s.intervalMs)}: Weir/Flink · Weir/KStreams · Weir/raw`)], ratioRows),
  );
  return `${lines.join('\n')}\n`;
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A 2x3 grid of grouped bar charts: one panel per metric, one group per setting, one bar per system. */
export function renderChart(meta: ReportMeta, results: CaseResult[]): string {
  const panels = METRICS.filter((metric) => metric.name !== 'throughput, steady state');
  const settings = settingsOf(results);
  const systems = SYSTEM_ORDER.filter((system) => results.some((r) => r.system === system));
  const panelWidth = 440;
  const panelHeight = 250;
  const columns = 3;
  const rows = Math.ceil(panels.length / columns);
  const width = panelWidth * columns + 20;
  const height = 70 + rows * panelHeight + 40;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
  );
  out.push(`<title>${escapeXml(`Weir, Apache Flink, Kafka Streams and the raw client pipe: ${meta.command}, ${meta.date.slice(0, 10)}`)}</title>`);
  out.push(`<rect width="${width}" height="${height}" fill="#fff"/>`);
  out.push(
    `<text x="10" y="22" font-size="15" font-weight="bold">${escapeXml(`Exactly-once read → parse → keyBy → count → write, ${meta.records.toLocaleString('en')} records, ${meta.partitions} partitions, one local broker`)}</text>`,
  );
  let legendX = 10;
  for (const system of systems) {
    out.push(`<rect x="${legendX}" y="34" width="12" height="12" fill="${COLORS[system]}"/>`);
    out.push(`<text x="${legendX + 16}" y="44">${escapeXml(SYSTEM_LABELS[system])}</text>`);
    legendX += 20 + SYSTEM_LABELS[system].length * 6.5 + 16;
  }
  out.push(`<text x="${legendX}" y="44" fill="#c53030">✕ = void (wrong output) or failed; – = not measured</text>`);
  for (const [index, metric] of panels.entries()) {
    const x0 = 10 + (index % columns) * panelWidth;
    const y0 = 60 + Math.floor(index / columns) * panelHeight;
    const plotLeft = x0 + 55;
    const plotTop = y0 + 30;
    const plotWidth = panelWidth - 75;
    const plotHeight = panelHeight - 80;
    out.push(
      `<text x="${x0 + 5}" y="${y0 + 18}" font-size="13" font-weight="bold">${escapeXml(`${metric.name} (${metric.unit}, ${metric.higherIsBetter ? 'higher' : 'lower'} is better)`)}</text>`,
    );
    const values = settings.flatMap((s) => systems.map((system) => valid(find(results, system, s.parallelism, s.intervalMs), metric) ?? 0));
    const max = niceCeiling(Math.max(1, ...values));
    for (let tick = 0; tick <= 4; tick++) {
      const y = plotTop + plotHeight - (plotHeight * tick) / 4;
      out.push(`<line x1="${plotLeft}" y1="${y}" x2="${plotLeft + plotWidth}" y2="${y}" stroke="#e2e8f0"/>`);
      out.push(`<text x="${plotLeft - 5}" y="${y + 4}" text-anchor="end">${escapeXml(shortNumber((max * tick) / 4))}</text>`);
    }
    const groupWidth = plotWidth / settings.length;
    const barWidth = Math.min(22, (groupWidth - 12) / systems.length);
    for (const [g, s] of settings.entries()) {
      const groupLeft = plotLeft + g * groupWidth + (groupWidth - barWidth * systems.length) / 2;
      for (const [b, system] of systems.entries()) {
        const result = find(results, system, s.parallelism, s.intervalMs);
        const value = valid(result, metric);
        const x = groupLeft + b * barWidth;
        if (value === undefined) {
          const bad = result !== undefined && result.status !== 'ok';
          out.push(
            `<text x="${x + barWidth / 2}" y="${plotTop + plotHeight - 3}" text-anchor="middle" fill="${bad ? '#c53030' : '#a0aec0'}">${bad ? '✕' : '–'}</text>`,
          );
          continue;
        }
        const barHeight = (plotHeight * value) / max;
        out.push(
          `<rect x="${x + 1}" y="${plotTop + plotHeight - barHeight}" width="${barWidth - 2}" height="${barHeight}" fill="${COLORS[system]}"><title>${escapeXml(`${SYSTEM_LABELS[system]}: ${Math.round(value).toLocaleString('en')} ${metric.unit}`)}</title></rect>`,
        );
      }
      out.push(
        `<text x="${plotLeft + g * groupWidth + groupWidth / 2}" y="${plotTop + plotHeight + 16}" text-anchor="middle">${escapeXml(`p${s.parallelism}, ${intervalText(s.intervalMs)}`)}</text>`,
      );
    }
    out.push(`<line x1="${plotLeft}" y1="${plotTop + plotHeight}" x2="${plotLeft + plotWidth}" y2="${plotTop + plotHeight}" stroke="#4a5568"/>`);
  }
  out.push(
    `<text x="10" y="${height - 12}" fill="#4a5568">${escapeXml(`${meta.date.slice(0, 10)} · ${meta.command} · raw pipe: no transactions, no interval (its one run per parallelism is shown in both interval groups), no recovery (not fault tolerant)`)}</text>`,
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function niceCeiling(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function shortNumber(value: number): string {
  if (value >= 1_000_000) return `${(value / 1_000_000).toFixed(value % 1_000_000 === 0 ? 0 : 1)}M`;
  if (value >= 1000) return `${(value / 1000).toFixed(value % 1000 === 0 ? 0 : 1)}k`;
  return String(Math.round(value));
}
