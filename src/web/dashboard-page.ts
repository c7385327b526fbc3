/**
 * The web dashboard of a running job: one static page (no build step, no framework) that polls the
 * REST API once a second and draws the job graph, per-operator records and back pressure, the
 * checkpoint counts (over the job's life) and history, the sinks' transactions and the restarts.
 * Everything it shows comes from GET /api/job and GET /api/checkpoints, so what the page shows the
 * CLI and scripts can read too. A job with a token is opened as `<address>/#token=<token>`.
 *
 * The page's script avoids template literals so it can live in this TypeScript string.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Weir</title>
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
  <section>
    <h2>Job graph</h2>
    <svg id="graph" data-testid="job-graph" width="100%" height="140"></svg>
  </section>
  <section>
    <h2>Operators</h2>
    <table data-testid="operators">
      <thead><tr><th>Operator chain</th><th>Parallelism</th><th>Records in</th><th>Records out</th><th>In / s</th><th>Out / s</th><th>Busy</th><th>Back pressure</th><th class="text">Watermark</th><th class="text">Bad records</th></tr></thead>
      <tbody id="operators"></tbody>
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
      <thead><tr><th>ID</th><th class="text">Kind</th><th class="text">Status</th><th class="text">Triggered</th><th>Duration</th><th>Size</th><th>Alignment</th><th class="text">Reason</th></tr></thead>
      <tbody id="checkpoints"></tbody>
    </table>
  </section>
  <section>
    <h2>Restarts</h2>
    <table data-testid="restarts">
      <thead><tr><th class="text">Time</th><th class="text">Cause</th></tr></thead>
      <tbody id="restarts"></tbody>
    </table>
  </section>
</main>
<script>
"use strict";
function el(tag, attrs, children) {
  var node = document.createElement(tag);
  for (var name in attrs || {}) node.setAttribute(name, attrs[name]);
  (children || []).forEach(function (child) { node.append(child === null || child === undefined ? "" : child); });
  return node;
}
function svg(tag, attrs, text) {
  var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (var name in attrs) node.setAttribute(name, attrs[name]);
  if (text !== undefined) node.textContent = text;
  return node;
}
function count(n) { return Math.round(n).toLocaleString("en-US"); }
function rate(n) { return n >= 1000 ? (n / 1000).toFixed(1) + "k" : n.toFixed(0); }
function percent(r) { return (r * 100).toFixed(0) + "%"; }
function bytes(n) { return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(1) + " MiB"; }
function ms(n) { return n === undefined || n === null ? "" : n + " ms"; }
function time(t) { return new Date(t).toLocaleTimeString(); }
function watermark(w) { return w === null || w === undefined ? "—" : w >= 8e15 ? "end of event time" : new Date(w).toISOString().replace("T", " ").replace(/[.][0-9]+Z$/, "Z"); }
function bpClass(r) { return r < 0.1 ? "bp-ok" : r < 0.5 ? "bp-low" : "bp-high"; }
function row(cells, attrs) { return el("tr", attrs, cells.map(function (c) { return c instanceof Node ? c : el("td", {}, [String(c)]); })); }
function cell(text, cls) { return el("td", cls ? { class: cls } : {}, [text]); }
function fill(id, rows, empty, columns) {
  var body = document.getElementById(id);
  body.replaceChildren.apply(body, rows.length > 0 ? rows : [el("tr", {}, [el("td", { colspan: String(columns), class: "empty text" }, [empty])])]);
}

function drawGraph(job) {
  var graph = document.getElementById("graph");
  var depth = {};
  job.vertices.forEach(function (v) { depth[v.id] = 0; });
  for (var pass = 0; pass < job.vertices.length; pass++) {
    job.edges.forEach(function (e) { depth[e.target] = Math.max(depth[e.target], depth[e.source] + 1); });
  }
  var columns = {};
  job.vertices.forEach(function (v) { (columns[depth[v.id]] = columns[depth[v.id]] || []).push(v); });
  var W = 230, H = 70, GX = 70, GY = 20, pos = {};
  var maxRows = 1;
  Object.keys(columns).forEach(function (d) {
    maxRows = Math.max(maxRows, columns[d].length);
    columns[d].forEach(function (v, i) { pos[v.id] = { x: 10 + Number(d) * (W + GX), y: 10 + i * (H + GY) }; });
  });
  graph.setAttribute("height", String(20 + maxRows * (H + GY)));
  graph.setAttribute("viewBox", "0 0 " + (20 + Object.keys(columns).length * (W + GX)) + " " + (20 + maxRows * (H + GY)));
  graph.replaceChildren();
  var defs = svg("defs", {});
  var marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "8", markerHeight: "8", orient: "auto" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6b7385" }));
  defs.append(marker);
  graph.append(defs);
  job.edges.forEach(function (e) {
    var a = pos[e.source], b = pos[e.target];
    if (!a || !b) return;
    var x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    graph.append(svg("path", { d: "M" + x1 + "," + y1 + " C" + (x1 + GX / 2) + "," + y1 + " " + (x2 - GX / 2) + "," + y2 + " " + x2 + "," + y2, stroke: "#6b7385", fill: "none", "marker-end": "url(#arrow)" }));
    graph.append(svg("text", { x: String((x1 + x2) / 2), y: String((y1 + y2) / 2 - 6), "text-anchor": "middle", fill: "#6b7385" }, e.partitioning.toUpperCase()));
  });
  job.vertices.forEach(function (v) {
    var p = pos[v.id];
    var g = svg("g", { "data-testid": "vertex", "data-parallelism": String(v.parallelism) });
    var stroke = v.backPressured >= 0.5 ? "#c0392b" : v.backPressured >= 0.1 ? "#c77c02" : "#2c5fb3";
    g.append(svg("rect", { x: String(p.x), y: String(p.y), width: String(W), height: String(H), rx: "6", fill: "#fff", stroke: stroke, "stroke-width": "2" }));
    g.append(svg("text", { x: String(p.x + 10), y: String(p.y + 20), "font-weight": "600" }, v.name.length > 32 ? v.name.slice(0, 31) + "…" : v.name));
    g.append(svg("text", { x: String(p.x + 10), y: String(p.y + 38), fill: "#6b7385" }, "Parallelism: " + v.parallelism));
    g.append(svg("text", { x: String(p.x + 10), y: String(p.y + 56), fill: "#6b7385" }, "in " + rate(v.recordsInPerSecond) + "/s · out " + rate(v.recordsOutPerSecond) + "/s · bp " + percent(v.backPressured)));
    var title = svg("title", {}, v.name);
    g.append(title);
    graph.append(g);
  });
}

function render(job, checkpoints) {
  document.title = "Weir: " + job.name;
  document.getElementById("job-name").textContent = job.name;
  var state = document.getElementById("job-state");
  state.textContent = job.state;
  state.className = "state " + job.state;
  document.getElementById("job-meta").textContent =
    "attempt " + (job.restarts.length + 1) + " · latest checkpoint " + (job.latestCheckpointId === undefined || job.latestCheckpointId === null ? "none" : job.latestCheckpointId);
  drawGraph(job);

  fill("operators", job.vertices.map(function (v) {
    return row([cell(v.name, "text"), v.parallelism, count(v.recordsIn), count(v.recordsOut), rate(v.recordsInPerSecond), rate(v.recordsOutPerSecond), percent(v.busy), cell(percent(v.backPressured), bpClass(v.backPressured)), cell(watermark(v.watermark), "text"), cell(badRecords(v.operators), "text")], { "data-testid": "operator-row" });
  }), "no operators", 10);

  function badRecords(operators) {
    var sums = { recordsSkipped: 0, deadLetters: 0, recordsLostOutOfRange: 0 };
    Object.keys(operators).forEach(function (key) {
      var name = key.slice(key.lastIndexOf(".") + 1);
      if (name in sums) sums[name] += operators[key];
    });
    var parts = [];
    if (sums.recordsSkipped > 0) parts.push(count(sums.recordsSkipped) + " skipped");
    if (sums.deadLetters > 0) parts.push(count(sums.deadLetters) + " dead letters");
    if (sums.recordsLostOutOfRange > 0) parts.push(count(sums.recordsLostOutOfRange) + " lost (offset out of range)");
    return parts.join(" · ");
  }

  var sinks = [];
  job.vertices.forEach(function (v) {
    var uids = {};
    Object.keys(v.operators).forEach(function (key) {
      var at = key.indexOf(".transactions.");
      if (at > 0) (uids[key.slice(0, at)] = uids[key.slice(0, at)] || {})[key.slice(at + 14)] = v.operators[key];
    });
    Object.keys(uids).forEach(function (uid) { sinks.push({ name: uid, t: uids[uid] }); });
  });
  fill("transactions", sinks.map(function (s) {
    return row([cell(s.name, "text"), count(s.t.open || 0), count(s.t.pending || 0), count(s.t.preCommitted || 0), count(s.t.committed || 0), count(s.t.aborted || 0)], { "data-testid": "transaction-row" });
  }), "no two-phase-commit sinks", 6);

  var counts = job.checkpointCounts;
  document.getElementById("checkpoint-counts").textContent =
    count(counts.completed) + " completed · " + count(counts.failed) + " aborted · " + count(counts.inProgress) + " in progress · " + count(counts.restored) + " restored";
  fill("checkpoints", checkpoints.slice(-50).reverse().map(function (c) {
    return row([c.checkpointId, cell(c.kind, "text"), cell(c.status, "text " + c.status), cell(time(c.triggeredAt), "text"), ms(c.durationMs), bytes(c.bytes), ms(c.alignmentMs), cell(c.reason || "", "text")], { "data-testid": "checkpoint-row", "data-status": c.status });
  }), "no checkpoints yet", 8);

  fill("restarts", job.restarts.slice().reverse().map(function (r) {
    return row([cell(time(r.at), "text"), cell(r.cause, "text")], { "data-testid": "restart-row" });
  }), "no restarts", 2);
}

// A job started with --ui-token: open the dashboard as <address>/#token=<token> (the fragment never leaves the browser).
var token = /(?:^#|&)token=([^&]+)/.exec(location.hash);
var requestInit = token ? { headers: { authorization: "Bearer " + decodeURIComponent(token[1]) } } : {};
async function refresh() {
  try {
    var answers = await Promise.all([fetch("api/job", requestInit), fetch("api/checkpoints", requestInit)]);
    if (!answers[0].ok || !answers[1].ok) throw new Error("the REST API answered " + answers[0].status + "/" + answers[1].status);
    render(await answers[0].json(), await answers[1].json());
    document.getElementById("fetch-error").textContent = "";
  } catch (error) {
    document.getElementById("fetch-error").textContent = "job unreachable: " + error.message;
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
`;
