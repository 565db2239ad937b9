// The Sluice console: a page per hash route (#/, #/topics, #/topics/NAME, #/messages,
// #/groups, #/groups/NAME, #/charts), each drawn from the JSON API (/api/...). Text
// from the broker (topic names, keys, values) only ever goes into textContent.
"use strict";

const main = document.getElementById("main");
let info = { admin: false, nodeId: 0, limits: {} };

// h builds an element: h("td", {class: "num"}, "12", childNode, ...).
function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path, opts) {
  const resp = await fetch(path, Object.assign({ headers: { Accept: "application/json" } },
    opts || {}));
  let body = null;
  try { body = await resp.json(); } catch (e) { body = null; }
  if (!resp.ok) {
    const msg = body && body.error ? body.error : resp.status + " " + resp.statusText;
    const err = new Error(msg);
    err.status = resp.status;
    throw err;
  }
  return body;
}

async function post(path, payload) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json",
    Accept: "application/json" }, body: JSON.stringify(Object.assign({ confirm: true },
    payload)) });
}

// confirmAction shows the confirmation dialog; resolves true when confirmed.
function confirmAction(text) {
  const dlg = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  return new Promise((resolve) => {
    const ok = document.getElementById("confirm-ok");
    const cancel = document.getElementById("confirm-cancel");
    const done = (v) => { ok.onclick = cancel.onclick = null; dlg.close(); resolve(v); };
    ok.onclick = () => done(true);
    cancel.onclick = () => done(false);
    dlg.showModal();
  });
}

function table(headers, rows, attrs) {
  return h("table", attrs, h("thead", {}, h("tr", {}, headers.map((c) =>
    typeof c === "string" ? h("th", {}, c) : h("th", { class: c.cls }, c.text)))),
  h("tbody", {}, rows));
}

function card(label, value, cls) {
  return h("div", { class: "card" }, h("div", { class: "label" }, label),
    h("div", { class: "value " + (cls || "") }, value));
}

const num = (v) => (v === null || v === undefined ? "—" : Number(v).toLocaleString("en-US"));
const ids = (l) => (l && l.length ? l.join(", ") : "—");

function bytes(v) {
  if (v === null || v === undefined) return "—";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i === 0 ? v : v.toFixed(1)) + " " + u[i];
}

function topicLink(t) { return h("a", { href: "#/topics/" + encodeURIComponent(t) }, t); }
function groupLink(g) { return h("a", { href: "#/groups/" + encodeURIComponent(g) }, g); }

function errorBox(err) { return h("div", { class: "error", "data-error": "1" }, err.message); }

// ---- overview ----

async function pageOverview() {
  const c = await api("/api/cluster");
  const urp = c.underReplicated.length, off = c.offline.length;
  const brokers = c.brokers.map((b) => h("tr", { "data-broker": b.id },
    h("td", { class: "num" }, b.id), h("td", {}, b.host + ":" + b.port),
    h("td", {}, b.rack === null ? "—" : b.rack),
    h("td", { class: "ok" }, b.state),
    h("td", {}, [b.controller ? h("span", { class: "tag" }, "controller") : null, " ",
      b.thisNode ? h("span", { class: "tag" }, "this node") : null]),
    h("td", { class: "num" }, num(b.leaders)), h("td", { class: "num" }, num(b.replicas))));
  const problems = [];
  for (const [what, list] of [["under-replicated", c.underReplicated], ["offline", c.offline]]) {
    for (const tp of list) {
      problems.push(h("tr", { "data-problem": what }, h("td", {}, topicLink(tp.topic)),
        h("td", { class: "num" }, tp.partition), h("td", { class: "bad" }, what)));
    }
  }
  return [
    h("h1", {}, "Cluster overview"),
    h("div", { class: "cards" },
      card("Cluster id", c.clusterId || "—", "small"),
      card("Controller", c.controller < 0 ? "none" : "node " + c.controller),
      card("Metadata quorum leader", c.quorumLeader === null ? "—" :
        c.quorumLeader < 0 ? "none" : "node " + c.quorumLeader),
      card("Brokers", num(c.brokers.length)),
      card("Topics", num(c.topics)),
      card("Partitions", num(c.partitions)),
      card("Under-replicated", num(urp), urp ? "warn" : "ok"),
      card("Offline partitions", num(off), off ? "bad" : "ok"),
      card("Client connections", num(c.connectionsOpen))),
    h("h2", {}, "Brokers"),
    table(["Id", "Address", "Rack", "State", "Role", { text: "Leads", cls: "num" },
      { text: "Replicas", cls: "num" }], brokers, { id: "brokers" }),
    h("h2", {}, "Quorum and controller"),
    c.quorum.length ? table(["Series", { text: "Value", cls: "num" }], c.quorum.map((q) =>
      h("tr", {}, h("td", {}, q.name), h("td", { class: "num" }, num(q.value))))) :
      h("p", { class: "muted" }, "The node exports no quorum series beyond its leader."),
    h("h2", {}, "Partitions needing attention"),
    problems.length ? table(["Topic", { text: "Partition", cls: "num" }, "Problem"], problems,
      { id: "problems" }) : h("p", { class: "ok", id: "no-problems" },
      "Every partition has a leader and a full ISR."),
  ];
}

// ---- topics ----

async function pageTopics() {
  const t = await api("/api/topics");
  const rows = t.topics.map((x) => h("tr", { "data-topic": x.name },
    h("td", {}, topicLink(x.name), x.internal ? h("span", { class: "tag" }, "internal") : null),
    h("td", { class: "num" }, x.partitions), h("td", { class: "num" }, x.replicationFactor),
    h("td", { class: "num" }, num(x.records)),
    h("td", { class: "num " + (x.underReplicated ? "warn" : "") }, x.underReplicated),
    h("td", { class: "num " + (x.offline ? "bad" : "") }, x.offline)));
  const out = [h("h1", {}, "Topics")];
  if (info.admin) out.push(createTopicForm());
  out.push(table(["Topic", { text: "Partitions", cls: "num" },
    { text: "Replication", cls: "num" }, { text: "Records", cls: "num" },
    { text: "Under-replicated", cls: "num" }, { text: "Offline", cls: "num" }], rows,
  { id: "topics" }));
  if (t.truncated) out.push(h("p", { class: "notice" }, "Only the first topics are listed."));
  return out;
}

function createTopicForm() {
  const name = h("input", { name: "name", required: true, placeholder: "topic name",
    pattern: "[a-zA-Z0-9._\\-]{1,249}" });
  const parts = h("input", { name: "partitions", type: "number", min: 1, value: 1 });
  const rf = h("input", { name: "rf", type: "number", min: 1, value: 1 });
  const status = h("span", { class: "muted" });
  const form = h("form", { class: "inline", "data-admin": "create-topic",
    onsubmit: async (ev) => {
      ev.preventDefault();
      const p = Number(parts.value), r = Number(rf.value);
      if (!(await confirmAction(`Create topic "${name.value}" with ${p} partition(s) and ` +
        `replication factor ${r}?`))) return;
      try {
        await post("/api/admin/topics", { name: name.value, partitions: p,
          replicationFactor: r });
        location.hash = "#/topics/" + encodeURIComponent(name.value);
      } catch (e) { status.textContent = e.message; status.className = "bad"; }
    } },
  h("label", {}, "New topic", name), h("label", {}, "Partitions", parts),
  h("label", {}, "Replication factor", rf),
  h("button", { type: "submit", class: "primary" }, "Create topic…"), status);
  return form;
}

async function pageTopic(name) {
  const t = await api("/api/topics/" + encodeURIComponent(name));
  const rows = t.partitions.map((p) => {
    const records = p.startOffset !== null && p.endOffset !== null ?
      p.endOffset - p.startOffset : null;
    const urp = p.isr.length < p.replicas.length;
    return h("tr", { "data-partition": p.partition },
      h("td", { class: "num" }, p.partition),
      h("td", { class: "num " + (p.leader < 0 ? "bad" : "") }, p.leader < 0 ? "none" : p.leader),
      h("td", {}, ids(p.replicas)), h("td", { class: urp ? "warn" : "" }, ids(p.isr)),
      h("td", { class: p.offlineReplicas.length ? "bad" : "" }, ids(p.offlineReplicas)),
      h("td", { class: "num" }, num(p.startOffset)), h("td", { class: "num" }, num(p.endOffset)),
      h("td", { class: "num" }, num(records)), h("td", { class: "num" }, bytes(p.sizeBytes)),
      h("td", {}, h("a", { href: `#/messages?topic=${encodeURIComponent(t.name)}` +
        `&partition=${p.partition}` }, "browse")));
  });
  const cfgRows = t.configs.map((c) => h("tr", { "data-config": c.name },
    h("td", {}, c.name), h("td", {}, c.sensitive ? "(sensitive)" : c.value === null ? "—" :
      c.value), h("td", { class: "muted" }, c.source),
    info.admin ? h("td", {}, editConfigButton(t.name, c)) : null));
  return [
    h("h1", {}, "Topic ", h("span", { id: "topic-name" }, t.name)),
    h("h2", {}, "Partitions"),
    table([{ text: "Partition", cls: "num" }, { text: "Leader", cls: "num" }, "Replicas",
      "ISR", "Offline replicas", { text: "Start offset", cls: "num" },
      { text: "High watermark", cls: "num" }, { text: "Records", cls: "num" },
      { text: "Size on this node", cls: "num" }, ""], rows, { id: "partitions" }),
    h("h2", {}, "Configuration"),
    table(["Name", "Value", "Source"].concat(info.admin ? [""] : []), cfgRows,
      { id: "configs" }),
  ];
}

function editConfigButton(topic, c) {
  return h("button", { type: "button", "data-admin": "alter-config", onclick: async () => {
    const v = prompt(`New value of ${c.name} for topic ${topic} (empty: the default)`,
      c.value || "");
    if (v === null) return;
    if (!(await confirmAction(`Set ${c.name} of topic "${topic}" to ` +
      (v === "" ? "its default" : `"${v}"`) + "?"))) return;
    try {
      await post(`/api/admin/topics/${encodeURIComponent(topic)}/configs`,
        { set: { [c.name]: v === "" ? null : v } });
      route();
    } catch (e) { alert(e.message); }
  } }, "Edit…");
}

// ---- messages ----

function hashParams() {
  const i = location.hash.indexOf("?");
  return new URLSearchParams(i < 0 ? "" : location.hash.slice(i + 1));
}

function renderBytes(b, format) {
  if (b === null) return h("span", { class: "muted" }, "null");
  let f = format;
  if (f === "auto") f = b.json ? "json" : b.utf8 ? "text" : "hex";
  let text;
  if (f === "json" && b.json && !b.truncated) {
    try { text = JSON.stringify(JSON.parse(b.text), null, 2); } catch (e) { text = b.text; }
  } else if ((f === "text" || f === "json") && b.utf8) {
    text = b.text;
  } else {
    text = b.hex.replace(/(..)/g, "$1 ").trim();
  }
  return h("div", {}, h("pre", { class: "val" }, text),
    b.truncated ? h("span", { class: "tag" }, `${b.size} bytes, truncated`) : null);
}

async function pageMessages() {
  const q = hashParams();
  const topics = (await api("/api/topics")).topics;
  const topic = q.get("topic") || (topics[0] && topics[0].name) || "";
  const mode = q.get("offset") ? "offset" : q.get("timestamp") ? "timestamp" : "newest";
  const format = q.get("format") || "auto";
  const topicSel = h("select", { name: "topic" }, topics.map((t) =>
    h("option", { value: t.name, selected: t.name === topic }, t.name)));
  const part = h("input", { name: "partition", type: "number", min: 0,
    value: q.get("partition") || "0" });
  const modeSel = h("select", { name: "mode" }, ["newest", "offset", "timestamp"].map((m) =>
    h("option", { value: m, selected: m === mode }, m)));
  const offset = h("input", { name: "offset", type: "number", min: 0,
    value: q.get("offset") || "0" });
  const ts = h("input", { name: "timestamp", type: "datetime-local", step: 1,
    value: q.get("timestamp") ? new Date(Number(q.get("timestamp")) -
      new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 19) : "" });
  const limit = h("input", { name: "limit", type: "number", min: 1,
    max: info.limits.maxRecords || 100, value: q.get("limit") || "20" });
  const fmtSel = h("select", { name: "format" }, ["auto", "text", "json", "hex"].map((f) =>
    h("option", { value: f, selected: f === format }, f)));
  const go = (extra) => {
    const p = new URLSearchParams({ topic: topicSel.value, partition: part.value,
      limit: limit.value, format: fmtSel.value });
    if (modeSel.value === "offset") p.set("offset", offset.value);
    if (modeSel.value === "timestamp" && ts.value) p.set("timestamp",
      String(new Date(ts.value).getTime()));
    for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
    location.hash = "#/messages?" + p.toString();
  };
  const form = h("form", { class: "inline", id: "browse", onsubmit: (ev) => {
    ev.preventDefault(); go();
  } }, h("label", {}, "Topic", topicSel), h("label", {}, "Partition", part),
  h("label", {}, "From", modeSel), h("label", {}, "Offset", offset),
  h("label", {}, "Timestamp (local)", ts), h("label", {}, "Max records", limit),
  h("label", {}, "Show values as", fmtSel), h("button", { type: "submit", class: "primary" },
    "Read"));
  const out = [h("h1", {}, "Message browser"), form];
  if (!topic) return out.concat(h("p", { class: "muted" }, "There are no topics yet."));
  const ap = new URLSearchParams({ partition: part.value, limit: limit.value });
  if (q.get("offset")) ap.set("offset", q.get("offset"));
  if (q.get("timestamp")) ap.set("timestamp", q.get("timestamp"));
  let m;
  try {
    m = await api(`/api/topics/${encodeURIComponent(topic)}/messages?${ap}`);
  } catch (e) { return out.concat(errorBox(e)); }
  out.push(h("p", { class: "muted", id: "range" }, `Partition ${m.topic}-${m.partition} ` +
    `holds offsets ${m.startOffset} to ${m.endOffset - 1}; showing ${m.records.length} ` +
    `record(s) from offset ${m.from}.`));
  const rows = m.records.map((r) => h("tr", { "data-offset": r.offset },
    h("td", { class: "num" }, r.offset), h("td", {}, r.time),
    h("td", {}, renderBytes(r.key, format)), h("td", {}, renderBytes(r.value, format)),
    h("td", {}, r.headers.length ? r.headers.map((hd) => h("div", {}, h("b", {}, hd.key),
      ": ", hd.value === null ? "null" : hd.value.utf8 ? hd.value.text : hd.value.hex)) :
      h("span", { class: "muted" }, "—"))));
  out.push(table([{ text: "Offset", cls: "num" }, "Timestamp (UTC)", "Key", "Value",
    "Headers"], rows, { id: "records" }));
  if (m.next < m.endOffset) {
    out.push(h("p", {}, h("button", { type: "button", id: "next-page",
      onclick: () => go({ offset: String(m.next) }) }, `Next from offset ${m.next}`)));
  }
  return out;
}

// ---- groups ----

async function pageGroups() {
  const g = await api("/api/groups");
  const rows = g.groups.map((x) => h("tr", { "data-group": x.group },
    h("td", {}, groupLink(x.group)), h("td", {}, x.state), h("td", {}, x.protocolType || "—"),
    h("td", {}, x.protocol || "—"), h("td", { class: "num" }, x.members),
    h("td", { class: "num " + (x.totalLag ? "warn" : "") }, num(x.totalLag)),
    h("td", { class: "num" }, x.coordinator)));
  return [h("h1", {}, "Consumer groups"),
    rows.length ? table(["Group", "State", "Protocol type", "Assignor",
      { text: "Members", cls: "num" }, { text: "Total lag", cls: "num" },
      { text: "Coordinator", cls: "num" }], rows, { id: "groups" }) :
      h("p", { class: "muted" }, "No consumer groups yet.")];
}

async function pageGroup(name) {
  const g = await api("/api/groups/" + encodeURIComponent(name));
  const members = g.members.map((m) => h("tr", {}, h("td", {}, m.memberId),
    h("td", {}, m.clientId), h("td", {}, m.clientHost),
    h("td", {}, m.assigned.map((a) => h("div", {}, a.topic + ": " + a.partitions.join(", "))))));
  const lags = g.partitions.map((p) => h("tr", { "data-lag": p.topic + "-" + p.partition },
    h("td", {}, topicLink(p.topic)), h("td", { class: "num" }, p.partition),
    h("td", { class: "num" }, p.committed < 0 ? "none" : num(p.committed)),
    h("td", { class: "num" }, num(p.endOffset)),
    h("td", { class: "num " + (p.lag > 0 ? "warn" : "") }, p.lag < 0 ? "unknown" : num(p.lag)),
    h("td", {}, p.memberId || "—")));
  const out = [
    h("h1", {}, "Group ", h("span", { id: "group-name" }, g.group)),
    h("div", { class: "cards" }, card("State", g.state), card("Protocol type",
      g.protocolType || "—"), card("Assignor", g.protocol || "—"),
    card("Members", num(g.members.length)), card("Coordinator", "node " + g.coordinator),
    h("div", { class: "card", id: "total-lag" }, h("div", { class: "label" }, "Total lag"),
      h("div", { class: "value " + (g.totalLag ? "warn" : "ok") }, num(g.totalLag)))),
    h("h2", {}, "Members"),
    members.length ? table(["Member", "Client id", "Host", "Assigned"], members) :
      h("p", { class: "muted" }, "No members: the group is not consuming."),
    h("h2", {}, "Lag by partition"),
    table(["Topic", { text: "Partition", cls: "num" }, { text: "Committed", cls: "num" },
      { text: "High watermark", cls: "num" }, { text: "Lag", cls: "num" }, "Member"], lags,
    { id: "lag" }),
  ];
  if (info.admin) out.push(...resetOffsetsForm(g));
  return out;
}

function resetOffsetsForm(g) {
  const topics = [...new Set(g.partitions.map((p) => p.topic))];
  const topic = h("input", { name: "topic", value: topics[0] || "", required: true });
  const part = h("input", { name: "partition", placeholder: "all" });
  const to = h("select", { name: "to" }, ["earliest", "latest", "offset"].map((v) =>
    h("option", { value: v }, v)));
  const off = h("input", { name: "offset", type: "number", min: 0, value: 0 });
  const status = h("span", { class: "muted" }, g.state === "Empty" ? "" :
    "Offsets can be reset only while the group has no members.");
  return [h("h2", {}, "Reset offsets"), h("form", { class: "inline",
    "data-admin": "reset-offsets", onsubmit: async (ev) => {
      ev.preventDefault();
      const payload = { topic: topic.value, to: to.value, offset: Number(off.value) };
      if (part.value !== "") payload.partition = Number(part.value);
      const where = part.value === "" ? "every partition of " + topic.value :
        topic.value + "-" + part.value;
      if (!(await confirmAction(`Reset group "${g.group}" on ${where} to ${to.value}` +
        (to.value === "offset" ? " " + off.value : "") + "?"))) return;
      try {
        await post(`/api/admin/groups/${encodeURIComponent(g.group)}/offsets`, payload);
        route();
      } catch (e) { status.textContent = e.message; status.className = "bad"; }
    } }, h("label", {}, "Topic", topic), h("label", {}, "Partition", part),
  h("label", {}, "To", to), h("label", {}, "Offset", off),
  h("button", { type: "submit", class: "danger" }, "Reset offsets…"), status)];
}

// ---- live charts ----

const SPAN_MS = 5 * 60 * 1000;
const samples = []; // /api/stats answers, oldest first, at most SPAN_MS old

async function poll() {
  try {
    const s = await api("/api/stats");
    samples.push(s);
    while (samples.length && samples[0].time < s.time - SPAN_MS - 10000) samples.shift();
    if (main.dataset.page === "charts") drawCharts();
  } catch (e) { /* the next poll retries; the page shows the gap */ }
}

function chartSeries() {
  const produce = [], consume = [], lag = {}, p99 = {};
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1], b = samples[i];
    const dt = (b.time - a.time) / 1000;
    if (dt <= 0) continue;
    produce.push([b.time, Math.max(0, b.produced - a.produced) / dt]);
    consume.push([b.time, Math.max(0, b.committed - a.committed) / dt]);
    for (const hb of b.histograms) {
      const ha = a.histograms.find((x) => x.name === hb.name);
      const v = quantile(0.99, hb.bounds, ha ? ha.counts : null, hb.counts,
        ha ? ha.count : 0, hb.count);
      if (v !== null) (p99[hb.name] = p99[hb.name] || []).push([b.time, v * 1000]);
    }
  }
  for (const s of samples) {
    for (const [g, v] of Object.entries(s.lag)) (lag[g] = lag[g] || []).push([s.time, v]);
  }
  const top = (m) => Object.entries(m).slice(0, 6).map(([name, points]) => ({ name, points }));
  return { produce, consume, lag: top(lag), p99: top(p99) };
}

function drawCharts() {
  const box = document.getElementById("charts");
  if (!box) return;
  const now = samples.length ? samples[samples.length - 1].time : Date.now();
  // The window grows with the history this tab holds: one minute, up to five.
  const held = samples.length ? now - samples[0].time : 0;
  const span = Math.min(SPAN_MS, Math.max(60000, held));
  const s = chartSeries();
  box.replaceChildren(
    drawLineChart("Produce rate", "records/s", [{ name: "all topics", points: s.produce }],
      span, now),
    drawLineChart("Consume rate", "committed offsets/s", [{ name: "all groups",
      points: s.consume }], span, now),
    drawLineChart("Consumer lag", "records", s.lag, span, now),
    drawLineChart("p99 latency", "ms", s.p99.map((x) => ({ name: x.name.replace(/^sluice_/,
      "").replace(/_seconds$/, ""), points: x.points })), span, now));
  document.getElementById("samples").textContent = `${samples.length} sample(s) over the ` +
    "last " + Math.round((now - (samples.length ? samples[0].time : now)) / 1000) + " s";
}

async function pageCharts() {
  return [h("h1", {}, "Live charts"),
    h("p", { class: "muted" }, "Sampled every 2 s while this page is open; the history " +
      "lives in this browser tab (the node keeps none). ", h("span", { id: "samples" })),
    h("div", { class: "charts", id: "charts" })];
}

// ---- router ----

const routes = [
  [/^#?\/?$/, "overview", pageOverview],
  [/^#\/topics\/?$/, "topics", pageTopics],
  [/^#\/topics\/([^/?]+)$/, "topic", (m) => pageTopic(decodeURIComponent(m[1]))],
  [/^#\/messages(\?.*)?$/, "messages", pageMessages],
  [/^#\/groups\/?$/, "groups", pageGroups],
  [/^#\/groups\/([^/?]+)$/, "group", (m) => pageGroup(decodeURIComponent(m[1]))],
  [/^#\/charts\/?$/, "charts", pageCharts],
];

let routing = 0;
async function route() {
  const my = ++routing;
  const hash = location.hash || "#/";
  let page = "notfound", content;
  main.dataset.ready = "0";
  try {
    const r = routes.find(([re]) => re.test(hash));
    if (r) {
      page = r[1];
      content = await r[2](hash.match(r[0]));
    } else {
      content = [h("h1", {}, "Not found"), h("p", {}, "No page at " + hash)];
    }
  } catch (e) {
    content = [errorBox(e)];
  }
  if (my !== routing) return; // a later navigation won
  main.replaceChildren(...[content].flat());
  main.dataset.page = page;
  main.dataset.hash = hash;
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("active", a.dataset.nav === page.replace(/^(topic|group)$/, "$1s"));
  }
  if (page === "charts") drawCharts();
  main.dataset.ready = "1";
}

// ---- auto-refresh ----
// The pages that show the node's state redraw themselves every REFRESH_MS while the
// tab is visible, unless the user is busy on the page: a dialog open, a field focused
// or edited. A failed redraw keeps the page shown (the next navigation shows the
// error). The switch is remembered in this browser (localStorage).

const REFRESH_MS = 5000;
const refreshable = new Set(["overview", "topics", "topic", "groups", "group"]);
let autoRefresh = true;

function userBusy() {
  if (document.querySelector("dialog[open]")) return true;
  const a = document.activeElement;
  if (a && main.contains(a) && a.matches("input, select, textarea")) return true;
  return [...main.querySelectorAll("input, textarea")].some((e) =>
    e.type === "checkbox" ? e.checked !== e.defaultChecked : e.value !== e.defaultValue);
}

async function refresh() {
  const page = main.dataset.page, hash = main.dataset.hash;
  if (!autoRefresh || document.hidden || !refreshable.has(page) || userBusy()) return;
  if (main.dataset.ready !== "1" || hash !== (location.hash || "#/")) return;
  const my = routing;
  const r = routes.find(([re]) => re.test(hash));
  let content;
  try {
    content = await r[2](hash.match(r[0]));
  } catch (e) {
    return;
  }
  if (my !== routing || hash !== (location.hash || "#/") || userBusy()) return;
  main.replaceChildren(...[content].flat());
  main.dataset.refreshed = String(Number(main.dataset.refreshed || "0") + 1);
  document.getElementById("refreshed").textContent =
    "at " + new Date().toLocaleTimeString("en-GB");
}

function setupRefresh() {
  const box = document.getElementById("autorefresh");
  try { autoRefresh = localStorage.getItem("sluice.autorefresh") !== "off"; } catch (e) {}
  box.checked = autoRefresh;
  box.addEventListener("change", () => {
    autoRefresh = box.checked;
    try { localStorage.setItem("sluice.autorefresh", autoRefresh ? "on" : "off"); } catch (e) {}
    document.getElementById("refreshed").textContent = "";
  });
  setInterval(refresh, REFRESH_MS);
}

async function start() {
  try { info = await api("/api/info"); } catch (e) { /* read-only defaults */ }
  const mode = document.getElementById("mode");
  mode.textContent = info.admin ? "admin enabled" : "read-only";
  mode.classList.toggle("admin", info.admin);
  window.addEventListener("hashchange", route);
  // A click on the tab already shown draws it anew (no hashchange fires).
  for (const a of document.querySelectorAll("nav a, a.brand")) {
    a.addEventListener("click", () => {
      if (a.getAttribute("href") === (location.hash || "#/")) route();
    });
  }
  await route();
  poll();
  setInterval(poll, 2000);
  setupRefresh();
}

start();
