/**
 * The dashboard page's script (dashboard-page.ts loads it inline). It avoids template literals so it
 * can live in this TypeScript string.
 */
export const DASHBOARD_SCRIPT = `"use strict";
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
function tenths(n) { return n === undefined || n === null ? n : Math.round(n * 10) / 10; }
function time(t) { return new Date(t).toLocaleTimeString(); }
function watermark(w) { return w === null || w === undefined ? "—" : w >= 8e15 ? "end of event time" : new Date(w).toISOString().replace("T", " ").replace(/[.][0-9]+Z$/, "Z"); }
function bpClass(r) { return r < 0.1 ? "bp-ok" : r < 0.5 ? "bp-low" : "bp-high"; }
function row(cells, attrs) { return el("tr", attrs, cells.map(function (c) { return c instanceof Node ? c : el("td", {}, [String(c)]); })); }
function cell(text, cls) { return el("td", cls ? { class: cls } : {}, [text]); }
function fill(id, rows, empty, columns) {
  var body = document.getElementById(id);
  body.replaceChildren.apply(body, rows.length > 0 ? rows : [el("tr", {}, [el("td", { colspan: String(columns), class: "empty text" }, [empty])])]);
}

/** A name cut into lines of at most n characters, at the chain's arrows or spaces when it can. */
function wrap(text, n) {
  var lines = [], line = "";
  text.split(/( -> | )/).forEach(function (part) {
    if ((line + part).length > n && line.trim() !== "") { lines.push(line.trim()); line = part.trim() === "->" ? "-> " : part.trimStart(); }
    else line += part;
    while (line.length > n) { lines.push(line.slice(0, n)); line = line.slice(n); }
  });
  if (line.trim() !== "") lines.push(line.trim());
  return lines.length > 0 ? lines : [text];
}

var expanded = {};

// The charts of the job's last minutes (uPlot, served by the job itself).
var charts = {};
// Axis labels short enough to read (10k, 1.5M; 35 MB), and an axis as wide as its longest label:
// uPlot's default 50 px cut "10,000" to "0,000".
function compactNumber(v) {
  var a = Math.abs(v);
  var units = [[1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (var i = 0; i < units.length; i++) if (a >= units[i][0]) return String(Number((v / units[i][0]).toPrecision(3))) + units[i][1];
  return String(Number(v.toPrecision(3)));
}
function compactBytes(v) {
  var units = ["B", "KB", "MB", "GB", "TB"];
  var i = 0;
  while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return String(Number(v.toPrecision(3))) + " " + units[i];
}
function yAxis(format, extra) {
  var axis = {
    values: function (u, splits) { return splits.map(function (v) { return v == null ? "" : format(v); }); },
    size: function (u, values) {
      var longest = 0;
      (values || []).forEach(function (v) { longest = Math.max(longest, String(v).length); });
      return Math.max(40, Math.ceil(longest * 7.5) + 22);
    },
  };
  return Object.assign(axis, extra || {});
}
function chart(id, series, axes) {
  var host = document.getElementById(id);
  var width = Math.max(320, host.clientWidth || 420);
  var opts = { width: width, height: 180, series: [{}].concat(series), axes: [{}].concat(axes || [yAxis(compactNumber)]), legend: { show: true }, scales: { x: { time: true } } };
  if (charts[id]) charts[id].destroy();
  charts[id] = new uPlot(opts, [[]].concat(series.map(function () { return []; })), host);
  charts[id].seriesKey = series.map(function (s) { return s.label; }).join("|");
  return charts[id];
}
var palette = ["#2c5fb3", "#2e8540", "#c77c02", "#8e44ad", "#c0392b", "#16a085"];
function drawHistory(history) {
  if (typeof uPlot === "undefined") return;
  var samples = history.samples;
  var at = samples.map(function (s) { return s.at / 1000; });
  var throughput = charts["chart-throughput"] || chart("chart-throughput", [{ label: "read / s", stroke: palette[0] }, { label: "written / s", stroke: palette[1] }]);
  throughput.setData([at, samples.map(function (s) { return s.recordsInPerSecond; }), samples.map(function (s) { return s.recordsOutPerSecond; })]);
  var pressure = charts["chart-backpressure"] || chart("chart-backpressure", [{ label: "back pressure %", stroke: palette[4] }]);
  pressure.setData([at, samples.map(function (s) { return Math.round(s.backPressured * 100); })]);
  var sources = {};
  samples.forEach(function (s) { Object.keys(s.lag).forEach(function (uid) { sources[uid] = true; }); });
  var uids = Object.keys(sources).sort();
  var key = uids.join("|") || "none";
  var lag = charts["chart-lag"];
  if (!lag || lag.seriesKey !== key) lag = chart("chart-lag", (uids.length > 0 ? uids : ["none"]).map(function (uid, i) { return { label: uid, stroke: palette[i % palette.length] }; }));
  lag.setData([at].concat((uids.length > 0 ? uids : ["none"]).map(function (uid) { return samples.map(function (s) { return s.lag[uid] === undefined ? null : s.lag[uid]; }); })));
  var done = history.checkpoints;
  var cps = charts["chart-checkpoints"] || chart("chart-checkpoints", [{ label: "duration ms", stroke: palette[0], scale: "ms" }, { label: "size bytes", stroke: palette[2], scale: "bytes" }], [yAxis(compactNumber, { scale: "ms" }), yAxis(compactBytes, { scale: "bytes", side: 1, grid: { show: false } })]);
  cps.setData([done.map(function (c) { return c.at / 1000; }), done.map(function (c) { return c.durationMs; }), done.map(function (c) { return c.bytes; })]);
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
  var longest = 1;
  job.vertices.forEach(function (v) { longest = Math.max(longest, wrap(v.name, 32).length); });
  var W = 250, H = 54 + 16 * longest, GX = 70, GY = 20, pos = {};
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
    // The whole name, on as many lines as it takes (never cut off).
    var lines = wrap(v.name, 32);
    lines.forEach(function (line, i) { g.append(svg("text", { x: String(p.x + 10), y: String(p.y + 20 + i * 16), "font-weight": "600" }, line)); });
    var below = p.y + 20 + lines.length * 16;
    g.append(svg("text", { x: String(p.x + 10), y: String(below + 2), fill: "#6b7385" }, "Parallelism: " + v.parallelism));
    g.append(svg("text", { x: String(p.x + 10), y: String(below + 20), fill: "#6b7385" }, "in " + rate(v.recordsInPerSecond) + "/s · out " + rate(v.recordsOutPerSecond) + "/s · bp " + percent(v.backPressured)));
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

  var operatorRows = [];
  job.vertices.forEach(function (v) {
    // A sink chain sends nothing on: what it wrote is what came in.
    var out = v.sink ? count(v.recordsIn) + " written" : count(v.recordsOut);
    var tr = row([cell(v.name, "text name"), v.parallelism, count(v.recordsIn), out, rate(v.recordsInPerSecond), rate(v.sink ? v.recordsInPerSecond : v.recordsOutPerSecond), percent(v.busy), cell(percent(v.backPressured), bpClass(v.backPressured)), cell(watermark(v.watermark), "text"), cell(badRecords(v.operators), "text")], { "data-testid": "operator-row", class: "operator", "data-vertex": String(v.id), "data-sink": v.sink ? "true" : "false" });
    tr.addEventListener("click", function () { expanded[v.id] = !expanded[v.id]; render(job, checkpoints); });
    operatorRows.push(tr);
    if (expanded[v.id]) {
      var subtasks = el("table", { "data-testid": "subtasks" }, [
        el("thead", {}, [row(["Subtask", "Records in", "Records out", "In / s", "Out / s", "Busy", "Back pressure", cell("Watermark", "text")].map(function (h) { return el("th", {}, [h]); }))]),
        el("tbody", {}, v.subtasks.map(function (t) {
          return row([String(t.subtaskIndex + 1) + "/" + v.parallelism, count(t.recordsIn), count(t.recordsOut), rate(t.recordsInPerSecond), rate(t.recordsOutPerSecond), percent(t.busy), cell(percent(t.backPressured), bpClass(t.backPressured)), cell(watermark(t.watermark), "text")], { "data-testid": "subtask-row" });
        })),
      ]);
      operatorRows.push(el("tr", { class: "subtasks" }, [el("td", { colspan: "10" }, [subtasks])]));
    }
  });
  fill("operators", operatorRows, "no operators", 10);

  var failure = document.getElementById("failure");
  if (job.failure) {
    failure.replaceChildren(
      el("div", {}, [time(job.failure.at) + ": " + job.failure.message]),
      job.failure.hint ? el("div", { class: "meta" }, ["hint: " + job.failure.hint]) : "",
      job.failure.stack ? el("pre", { class: "stack", "data-testid": "failure-stack" }, [job.failure.stack]) : "",
    );
  } else {
    failure.replaceChildren(el("span", { class: "empty" }, ["none"]));
  }

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

  var userRows = [];
  job.vertices.forEach(function (v) {
    Object.keys(v.operators).sort().forEach(function (key) {
      var at = key.indexOf(".user.");
      if (at < 0) return;
      var value = v.operators[key];
      userRows.push(row([cell(key.slice(0, at), "text"), cell(key.slice(at + 6), "text"), Number.isInteger(value) ? count(value) : value.toFixed(2)], { "data-testid": "user-metric-row" }));
    });
  });
  fill("user-metrics", userRows, "none: functions register them with context.metrics in open()", 3);

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
    return row([c.checkpointId, cell(c.kind, "text"), cell(c.status, "text " + c.status), cell(time(c.triggeredAt), "text"), ms(c.durationMs), ms(tenths(c.syncMs)), ms(tenths(c.asyncMs)), bytes(c.bytes), ms(c.alignmentMs), cell(c.reason || "", "text")], { "data-testid": "checkpoint-row", "data-status": c.status });
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
async function refreshHistory() {
  try {
    var answer = await fetch("api/history", requestInit);
    if (answer.ok) drawHistory(await answer.json());
  } catch (error) {
    // the job is unreachable: refresh() says so
  }
}
// Cluster mode: the cluster as Kafka holds it (a job in one process answers 404: the section stays hidden).
function renderCluster(cluster) {
  document.getElementById("cluster-section").hidden = false;
  document.getElementById("cluster-meta").textContent = "(" + cluster.cluster + ": group " + cluster.state + ", generation " + (cluster.generation === undefined ? "-" : cluster.generation) + ")";
  fill("cluster-members", cluster.members.map(function (m) { return row([cell(m.id, "text"), cell(m.clientHost, "text"), count(m.tasks.length)]); }), "no member", 3);
  fill("cluster-tasks", cluster.tasks.map(function (t) {
    return row([cell(t.name, "text"), cell(t.owner || "—", "text"), t.checkpointId === undefined ? "—" : String(t.checkpointId), cell(t.completedAt ? time(t.completedAt) : "—", "text"), t.lag === undefined ? "—" : count(t.lag)]);
  }), "no task", 5);
}
var clusterTimer;
async function refreshCluster() {
  try {
    var answer = await fetch("api/cluster", requestInit);
    if (answer.status === 404) { clearInterval(clusterTimer); return; }
    if (answer.ok) renderCluster(await answer.json());
  } catch (error) {
    // the job is unreachable: refresh() says so
  }
}
refresh();
setInterval(refresh, 1000);
refreshHistory();
setInterval(refreshHistory, 2000);
refreshCluster();
clusterTimer = setInterval(refreshCluster, 2000);
`;
