/**
 * The web dashboard of a running job: one static page (no build step, no framework) that polls the
 * REST API and draws the job graph, charts of its last minutes (uPlot, served from the package:
 * it works offline), per-operator records and back pressure with a view per subtask, the
 * checkpoint counts (over the job's life) and history, the sinks' transactions, the latest failure
 * with its stack, and the restarts. Everything it shows comes from GET /api/job, /api/checkpoints
 * and /api/history, so what the page shows the CLI and scripts can read too. A job with a token is
 * opened as `<address>/#token=<token>`. Its script is dashboard-script.ts.
 */
import { DASHBOARD_SCRIPT } from './dashboard-script.ts';

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Weir</title>
<link rel="stylesheet" href="assets/uplot.css">
<style>
  :root { --fg: #1d2330; --muted: #6b7385; --line: #dde1e8; --bg: #f6f7f9; --ok: #2e8540; --warn: #c77c02; --bad: #c0392b; --accent: #2c5fb3; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
  header { display: flex; gap: 24px; align-items: baseline; padding: 14px 24px; background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { margin: 0; font-size: 18px; }
  header .state { font-weight: 600; text-transform: uppercase; font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #e8f3ea; color: var(--ok); }
  header .state.restarting, header .state.failed { background: #fbeaea; color: var(--bad); }
  header .state.starting { background: #fdf3e1; color: var(--warn); }
  header .meta { color: var(--muted); }
  main { padding: 16px 24px; display: grid; gap: 16px; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; }
  section h2 { margin: 0 0 8px; font-size: 15px; }
  table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
  th, td { text-align: right; padding: 4px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th:first-child, td:first-child, td.text, th.text { text-align: left; }
  td.name { white-space: normal; overflow-wrap: anywhere; min-width: 16em; }
  tr.operator { cursor: pointer; } tr.operator:hover { background: #f0f3f8; }
  tr.subtasks > td { background: #f9fafc; padding: 4px 8px 8px 24px; }
  .charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 12px; }
  .chart h3 { margin: 0 0 4px; font-size: 13px; font-weight: 500; color: var(--muted); }
  pre.stack { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; background: #fbf6f6; border: 1px solid #f0dcdc; padding: 8px; margin: 6px 0 0; }
  th { color: var(--muted); font-weight: 500; font-size: 12px; }
  .completed { color: var(--ok); } .aborted { color: var(--bad); } .pending { color: var(--warn); }
  .bp-ok { color: var(--ok); } .bp-low { color: var(--warn); } .bp-high { color: var(--bad); font-weight: 600; }
  .empty { color: var(--muted); font-style: italic; }
  svg text { font: 12px system-ui, sans-serif; }
  .error { color: var(--bad); }
</style>
</head>
<body>
<header>
  <h1 id="job-name">Weir</h1>
  <span class="state" id="job-state" data-testid="job-state">…</span>
  <span class="meta" id="job-meta"></span>
  <span class="error" id="fetch-error"></span>
</header>
<main>
  <section id="cluster-section" data-testid="cluster" hidden>
    <h2>Cluster <span class="meta" id="cluster-meta"></span></h2>
    <table data-testid="cluster-members">
      <thead><tr><th class="text">Member</th><th class="text">Host</th><th>Tasks</th></tr></thead>
      <tbody id="cluster-members"></tbody>
    </table>
    <table data-testid="cluster-tasks">
      <thead><tr><th class="text">Task</th><th class="text">Owner</th><th>Last checkpoint</th><th class="text">Completed</th><th>Lag</th></tr></thead>
      <tbody id="cluster-tasks"></tbody>
    </table>
  </section>
  <section>
    <h2>Job graph</h2>
    <svg id="graph" data-testid="job-graph" width="100%" height="140"></svg>
  </section>
  <section>
    <h2>Over the last minutes</h2>
    <div class="charts">
      <div class="chart"><h3>Records per second: read and written</h3><div id="chart-throughput" data-testid="chart-throughput"></div></div>
      <div class="chart"><h3>Consumer lag per source (records)</h3><div id="chart-lag" data-testid="chart-lag"></div></div>
      <div class="chart"><h3>Back pressure (the most back-pressured operator chain)</h3><div id="chart-backpressure" data-testid="chart-backpressure"></div></div>
      <div class="chart"><h3>Checkpoints: duration (ms) and size (bytes)</h3><div id="chart-checkpoints" data-testid="chart-checkpoints"></div></div>
    </div>
  </section>
  <section>
    <h2>Operators <span class="meta">(click a row for its subtasks)</span></h2>
    <table data-testid="operators">
      <thead><tr><th>Operator chain</th><th>Parallelism</th><th>Records in</th><th>Records out</th><th>In / s</th><th>Out / s</th><th>Busy</th><th>Back pressure</th><th class="text">Watermark</th><th class="text">Bad records</th></tr></thead>
      <tbody id="operators"></tbody>
    </table>
  </section>
  <section>
    <h2>User metrics</h2>
    <table data-testid="user-metrics">
      <thead><tr><th class="text">Operator</th><th class="text">Metric</th><th>Value</th></tr></thead>
      <tbody id="user-metrics"></tbody>
    </table>
  </section>
  <section>
    <h2>Sink transactions</h2>
    <table data-testid="transactions">
      <thead><tr><th>Sink</th><th>Open</th><th>Pre-committed, waiting</th><th>Pre-committed</th><th>Committed</th><th>Aborted</th></tr></thead>
      <tbody id="transactions"></tbody>
    </table>
  </section>
  <section>
    <h2>Checkpoints <span class="meta" id="checkpoint-counts"></span></h2>
    <table data-testid="checkpoints">
      <thead><tr><th>ID</th><th class="text">Kind</th><th class="text">Status</th><th class="text">Triggered</th><th>Duration</th><th title="the longest time a task stood still for it">Sync</th><th title="the longest time a task wrote its state while records flowed">Async</th><th>Size</th><th>Alignment</th><th class="text">Reason</th></tr></thead>
      <tbody id="checkpoints"></tbody>
    </table>
  </section>
  <section data-testid="failure-section">
    <h2>Latest failure</h2>
    <div id="failure" data-testid="failure"><span class="empty">none</span></div>
  </section>
  <section>
    <h2>Restarts</h2>
    <table data-testid="restarts">
      <thead><tr><th class="text">Time</th><th class="text">Cause</th></tr></thead>
      <tbody id="restarts"></tbody>
    </table>
  </section>
</main>
<script src="assets/uplot.js"></script>
<script>
${DASHBOARD_SCRIPT}</script>
</body>
</html>
`;
