// ThinkingDB explorer: search, proofs drawn as graphs, symbol and unit pages, over the JSON HTTP API.
// Plain browser JavaScript, no build step; graphs by the vendored Cytoscape.js. Text from the server is
// always inserted as text (textContent), never as HTML.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const state = { cy: null, labels: {} };

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    Object.assign(node, props || {});
    for (const c of children) node.append(c instanceof Node ? c : String(c));
    return node;
  }
  const lab = (k) => state.labels[k] || k;
  const num = (x) => Number(x).toFixed(3);
  const factKey = (f) => `${f.subject} ${f.relation} ${f.object}`;
  const factText = (f) => `${lab(f.subject)} ${f.relation} ${lab(f.object)}`;
  const base = (path) => String(path || "").split("/").pop();

  function status(text, error) {
    $("status").textContent = text;
    $("status").className = error ? "error" : "muted";
    $("detail-note").textContent = error ? text : $("detail-note").textContent;
  }

  // -- the API --------------------------------------------------------------------------------------
  function caller() {
    const out = {};
    const tags = $("tags").value.trim(), region = $("region").value.trim();
    if (tags || region) out.caller = { tags: tags.split(",").map((t) => t.trim()).filter(Boolean), region };
    if ($("asof").value) out.as_of = $("asof").value;
    return out;
  }
  function callerQuery() {
    const c = caller(), q = new URLSearchParams();
    if (c.as_of) q.set("as_of", c.as_of);
    if (c.caller) { q.set("tags", c.caller.tags.join(",")); q.set("region", c.caller.region); }
    const s = q.toString();
    return s ? "?" + s : "";
  }
  async function api(method, path, body) {
    const key = $("key").value.trim();
    sessionStorage.setItem("tdb-key", key);
    const opts = { method, headers: { Authorization: "Bearer " + key } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    const data = await r.json();
    if (!r.ok) throw new Error(`${r.status}: ${data.error ? data.error.message : r.statusText}`);
    return data;
  }
  async function whoami() {
    try {
      const w = await api("GET", "/whoami");
      $("who").textContent = `key ${w.name}: tags ${w.tags.join(", ") || "(none)"}, region ${w.region || "(none)"}` +
        (w.writer ? ", writer" : "");
    } catch (e) { $("who").textContent = e.message; }
  }

  // -- graphs ---------------------------------------------------------------------------------------
  const STYLE = [
    { selector: "node", style: {
      label: "data(label)", "text-wrap": "wrap", "text-max-width": 190, "font-size": 12, "text-valign": "center",
      "text-halign": "center", shape: "round-rectangle", "background-color": "#cfe2ff", "border-width": 1,
      "border-color": "#8794a8", width: (n) => Math.min(200, 12 + 7 * longest(n.data("label"))),
      height: (n) => 14 + 15 * String(n.data("label")).split("\n").length } },
    { selector: 'node[kind = "rule"]', style: { "background-color": "#ffd8a8", shape: "hexagon" } },
    { selector: 'node[kind = "asserted"]', style: { "background-color": "#c8ecd4" } },
    { selector: 'node[kind = "unit"], node[kind = "source"]', style: { "background-color": "#e4e7ec", shape: "tag" } },
    { selector: 'node[kind = "symbol"]', style: { "background-color": "#f3d9fa", shape: "ellipse" } },
    { selector: 'node[kind = "symbol"][?center]', style: { "border-width": 3, "border-color": "#8e44ad" } },
    { selector: "edge", style: {
      "curve-style": "bezier", "target-arrow-shape": "triangle", width: 1.4, "line-color": "#9aa5b1",
      "target-arrow-color": "#9aa5b1", label: "data(label)", "font-size": 9, "text-rotation": "autorotate",
      "text-background-color": "#fff", "text-background-opacity": 0.8 } },
  ];
  function longest(text) { return Math.max(...String(text).split("\n").map((l) => l.length)); }

  function draw(elements, layout) {
    if (state.cy) state.cy.destroy();
    document.body.dataset.graph = "drawing";
    $("graph").hidden = false;
    state.cy = cytoscape({ container: $("graph"), elements, style: STYLE, layout, minZoom: 0.2, maxZoom: 1.4 });
    state.cy.on("tap", 'node[kind = "symbol"]', (ev) => { location.hash = "#symbol/" + encodeURIComponent(ev.target.data("key")); });
    state.cy.on("tap", 'node[kind = "unit"]', (ev) => { location.hash = "#unit/" + encodeURIComponent(ev.target.data("unit")); });
    document.body.dataset.graph = "ready";
    $("detail-view").scrollIntoView();
  }

  // A proof: facts (derived above, asserted leaves below), one node per rule application between a
  // conclusion and its premises, and under each leaf the units and sources that assert it.
  function proofElements(proof, provenance) {
    const nodes = new Map(), edges = [];
    let serial = 0;
    const node = (id, data) => { if (!nodes.has(id)) nodes.set(id, { data: { id, ...data } }); return id; };
    const edge = (source, target, label) => edges.push({ data: { id: "e" + edges.length, source, target, label } });
    const expanded = new Set();
    function walk(p) {
      const id = p.fact ? "f:" + factKey(p.fact) : "q:" + serial++;
      const kind = p.kind === "asserted" ? "asserted" : "derived";
      node(id, { kind, label: (p.fact ? factText(p.fact) : "answer") + "\n" + num(p.score), fact: p.fact && factKey(p.fact) });
      if (!p.premises.length || expanded.has(id)) return id;
      expanded.add(id);
      const how = p.kind === "rule" ? `rule ${p.rule} @${p.weight}` : p.kind;
      const rid = node("r:" + serial++, { kind: "rule", label: how });
      edge(id, rid, "by");
      for (const c of p.premises) edge(rid, walk(c), "");
      return id;
    }
    const root = walk(proof);
    for (const [id, n] of [...nodes]) {
      if (n.data.kind !== "asserted") continue;
      for (const row of provenance[n.data.fact] || []) {
        const where = `${base(row.source)}:${row.line}`;
        const sid = row.unit_id
          ? node("u:" + row.unit_id, { kind: "unit", unit: row.unit_id, label: `unit ${row.unit_id}\n${where}` })
          : node("s:" + row.source + ":" + row.line, { kind: "source", label: where });
        edge(id, sid, "stated in");
      }
    }
    return { elements: [...nodes.values(), ...edges], root };
  }

  async function showProof(proof, title, provenance) {
    openDetail(title);
    if (!provenance) {
      const leaves = [...new Set(collectLeaves(proof))];
      provenance = leaves.length ? (await api("POST", "/provenance", { facts: leaves, ...caller() })).provenance : {};
    }
    const { elements, root } = proofElements(proof, provenance);
    draw(elements, { name: "breadthfirst", directed: true, roots: [root], spacingFactor: 0.85, padding: 10 });
    const symbols = new Set();
    for (const f of collectFacts(proof)) { symbols.add(f.subject); symbols.add(f.object); }
    const list = el("p", {}, "symbols: ");
    for (const s of [...symbols].sort()) list.append(el("a", { href: "#symbol/" + encodeURIComponent(s) }, lab(s)), " ");
    const table = el("table", {}, el("tr", {}, el("th", {}, "asserted fact"), el("th", {}, "unit"), el("th", {}, "source")));
    for (const [fact, rows] of Object.entries(provenance)) {
      for (const row of rows) {
        const unit = row.unit_id ? el("a", { href: "#unit/" + encodeURIComponent(row.unit_id) }, row.unit_id) : "-";
        table.append(el("tr", {}, el("td", {}, fact), el("td", {}, unit), el("td", {}, `${row.source}:${row.line}`)));
      }
    }
    $("detail").replaceChildren(list, table);
    $("detail-note").textContent = `score ${num(proof.score)}, depth ${proof.depth}`;
  }
  function collectLeaves(p, out = []) {
    if (p.kind === "asserted" && p.fact) out.push(factKey(p.fact));
    for (const c of p.premises) collectLeaves(c, out);
    return out;
  }
  function collectFacts(p, out = []) {
    if (p.fact) out.push(p.fact);
    for (const c of p.premises) collectFacts(c, out);
    return out;
  }

  // A neighbourhood: symbols as nodes, facts as edges labelled by their relation.
  function factGraph(facts, center) {
    const nodes = new Map(), edges = [];
    const sym = (k) => { if (!nodes.has(k)) nodes.set(k, { data: { id: "y:" + k, key: k, kind: "symbol", label: lab(k), center: k === center } }); return "y:" + k; };
    if (center) sym(center);
    for (const f of facts) edges.push({ data: { id: "e" + edges.length, source: sym(f.subject), target: sym(f.object), label: `${f.relation} ${num(f.confidence)}` } });
    return [...nodes.values(), ...edges];
  }
  function factTable(facts) {
    const table = el("table", {}, el("tr", {}, ...["subject", "relation", "object", "confidence", "units"].map((h) => el("th", {}, h))));
    const link = (k) => el("a", { href: "#symbol/" + encodeURIComponent(k) }, lab(k));
    for (const f of facts) {
      const units = el("td");
      for (const u of f.units || []) units.append(el("a", { href: "#unit/" + encodeURIComponent(u) }, u), " ");
      table.append(el("tr", {}, el("td", {}, link(f.subject)), el("td", {}, f.relation), el("td", {}, link(f.object)),
        el("td", {}, num(f.confidence)), units));
    }
    return table;
  }

  async function showSymbol(key) {
    openDetail("symbol " + key);
    try {
      const data = await api("GET", "/symbols/" + encodeURIComponent(key) + callerQuery());
      state.labels = { ...state.labels, ...data.labels };
      $("detail-title").textContent = `symbol ${lab(key)}`;
      const facts = [...data.out, ...data.in];
      draw(factGraph(facts, key), { name: "concentric", concentric: (n) => (n.data("center") ? 2 : 1), levelWidth: () => 1, padding: 16 });
      $("detail-note").textContent = `${data.out.length} facts out, ${data.in.length} in` + (data.truncated ? " (cut at the limit)" : "");
      $("detail").replaceChildren(factTable(facts));
    } catch (e) { fail(e); }
  }

  async function showUnit(id) {
    openDetail("unit " + id);
    try {
      const data = await api("GET", "/units/" + encodeURIComponent(id) + callerQuery());
      state.labels = { ...state.labels, ...data.labels };
      const rows = Object.entries(data.unit).filter(([, v]) => v !== "" && !(Array.isArray(v) && !v.length));
      const table = el("table", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, typeof v === "string" ? v : JSON.stringify(v)))));
      draw(factGraph(data.facts, null), { name: "cose", animate: false, padding: 16 });
      $("detail-note").textContent = `${data.facts.length} facts asserted by this unit`;
      $("detail").replaceChildren(table, factTable(data.facts.map((f) => ({ ...f, units: [id] }))));
    } catch (e) { fail(e); }
  }

  function openDetail(title) {
    document.body.dataset.graph = "loading";
    $("detail-view").hidden = false;
    $("detail-title").textContent = title;
    $("detail-note").textContent = "";
    $("detail").replaceChildren();
  }
  function fail(e) {
    $("detail-note").textContent = e.message;
    $("detail-note").className = "error";
    if (state.cy) { state.cy.destroy(); state.cy = null; }
    $("graph").hidden = true;
    status(e.message, true);
  }

  // -- search and why -------------------------------------------------------------------------------
  async function search(ev) {
    ev.preventDefault();
    status("searching…");
    whoami();
    try {
      const data = await api("POST", "/search", { text: $("text").value, profile: $("profile").value, labels: true, ...caller() });
      state.labels = { ...state.labels, ...(data.labels || {}) };
      const items = data.results.map((r, i) => {
        const li = el("li", { className: "result" });
        li.dataset.unit = r.unit_id;
        li.append(el("a", { href: "#unit/" + encodeURIComponent(r.unit_id), className: "unit" }, r.unit_id), " ",
          el("span", { className: "score" }, num(r.score)), " ");
        for (const [lane, v] of Object.entries(r.lanes)) li.append(el("span", { className: "lane " + lane }, `${lane} #${v.rank} ${num(v.score)}`));
        if (r.states_answer) li.append(" ", el("span", { className: "states" }, "states the answer"));
        if (r.proof) {
          const b = el("button", { type: "button", className: "proof" }, "proof");
          b.onclick = () => showProof(r.proof, `proof for ${r.unit_id}`).catch(fail);
          li.append(" ", b);
        }
        return li;
      });
      $("results").replaceChildren(...items);
      const t = data.trace;
      status(`${data.results.length} result(s) · ${t.profile.name} · ${t.view.units} visible units · ${num(t.timings_ms.total)} ms`);
    } catch (e) { $("results").replaceChildren(); status(e.message, true); }
  }

  async function why(ev) {
    ev.preventDefault();
    try {
      const data = await api("POST", "/why", { fact: $("fact").value, labels: true, ...caller() });
      state.labels = { ...state.labels, ...(data.labels || {}) };
      if (!data.proof) { status("does not follow from the facts and rules this caller may see"); return; }
      status("");
      await showProof(data.proof, "why " + $("fact").value, data.provenance);
    } catch (e) { status(e.message, true); }
  }

  function route() {
    const [kind, ...rest] = location.hash.slice(1).split("/");
    const arg = decodeURIComponent(rest.join("/"));
    if (kind === "symbol" && arg) showSymbol(arg);
    else if (kind === "unit" && arg) showUnit(arg);
  }

  window.tdbExplorer = {
    nodes: () => (state.cy ? state.cy.nodes().map((n) => ({ id: n.id(), kind: n.data("kind"), label: n.data("label") })) : []),
    edges: () => (state.cy ? state.cy.edges().map((e) => ({ source: e.source().id(), target: e.target().id(), label: e.data("label") })) : []),
  };

  $("key").value = sessionStorage.getItem("tdb-key") || "";
  $("key").addEventListener("change", whoami);
  $("search").addEventListener("submit", search);
  $("why").addEventListener("submit", why);
  window.addEventListener("hashchange", route);
  if ($("key").value) whoami();
  route();
})();
