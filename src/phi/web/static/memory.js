// phi's memory page: the graph of people (from /api/memory/graph), a person's panel
// (from /api/users/{did}) and a search box (/api/memory/search). Plain DOM and SVG, no
// build step; every text from memory goes through textContent, never innerHTML.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
// A person's namespace: phi.memory.model.USER_NAMESPACE_PREFIX, the one spelling in Python.
const USER_NAMESPACE_PREFIX = "phi-users-";
const SIZE = 640, CENTRE = SIZE / 2, RADIUS = 260;
const PALETTE = ["#7aa2f7", "#9ece6a", "#e0af68", "#bb9af7", "#f7768e", "#2ac3de"];

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svgEl(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

function age(iso) {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  for (const [unit, size] of [["y", 31536000], ["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size) return `${Math.floor(seconds / size)}${unit} ago`;
  }
  return "just now";
}

// Off loopback the server wants the bearer token for reads too: ask once, keep it for
// this tab only (sessionStorage), and send it with every read.
function authHeaders() {
  const token = sessionStorage.getItem("phi-token");
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function getJSON(url) {
  let response = await fetch(url, { headers: authHeaders() });
  if (response.status === 401) {
    const token = window.prompt("This server needs its bearer token (PHI_WEB_TOKEN):");
    if (token) {
      sessionStorage.setItem("phi-token", token);
      response = await fetch(url, { headers: authHeaders() });
    }
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail ? JSON.stringify(body.detail) : response.statusText);
  return body;
}

function place(node) {
  return [CENTRE + node.x * RADIUS, CENTRE - node.y * RADIUS];
}

function drawGraph(graph) {
  const svg = document.getElementById("graph");
  svg.replaceChildren();
  const byDid = new Map(graph.people.map((p) => [p.did, p]));
  for (const edge of graph.edges) {
    const [x1, y1] = place(byDid.get(edge.source));
    const [x2, y2] = place(byDid.get(edge.target));
    const line = svgEl("line", { x1, y1, x2, y2, class: "edge", "stroke-width": Math.min(6, 1 + Math.log2(edge.weight)) });
    line.appendChild(svgEl("title")).textContent = `shared: ${edge.refs.join(", ")}`;
    svg.appendChild(line);
  }
  const phi = svgEl("g", { class: "phi" });
  phi.appendChild(svgEl("circle", { cx: CENTRE, cy: CENTRE, r: 18 }));
  const phiLabel = svgEl("text", { x: CENTRE, y: CENTRE + 4, "text-anchor": "middle" });
  phiLabel.textContent = "phi";
  phi.appendChild(phiLabel);
  svg.appendChild(phi);
  for (const person of graph.people) {
    const [x, y] = place(person);
    const group = svgEl("g", { class: "person", "data-did": person.did, "data-cluster": person.cluster, tabindex: 0 });
    group.appendChild(svgEl("circle", { cx: x, cy: y, r: Math.min(18, 6 + Math.sqrt(person.rows)), fill: PALETTE[person.cluster % PALETTE.length] }));
    const label = svgEl("text", { x: x + 12, y: y - 10 });
    label.textContent = person.label;
    group.appendChild(label);
    const basis = person.basis === "observations" ? `${person.observations} observations` : "no observations yet: placed by all rows";
    group.appendChild(svgEl("title")).textContent = `${person.label} (${person.did}) · ${basis}`;
    group.addEventListener("click", () => showPerson(person.did));
    svg.appendChild(group);
  }
  const legend = document.getElementById("legend");
  legend.replaceChildren(...graph.clusters.map((c) => {
    const item = el("li", { style: `--c: ${PALETTE[c.cluster % PALETTE.length]}` }, `${c.topic || "(no words)"} · ${c.size}`);
    return item;
  }));
  document.getElementById("graph-status").textContent =
    `${graph.people.length} people · ${graph.edges.length} links · phi at the centre`;
}

function rowItem(row, cls) {
  const item = el("li", { class: cls, "data-row-id": row.row_id });
  item.appendChild(el("div", { class: "content" }, row.content));
  const meta = el("div", { class: "meta" });
  meta.appendChild(el("span", { class: `trust-${row.trust}` }, `${row.kind} · ${row.trust} trust`));
  meta.appendChild(document.createTextNode(` · ${age(row.created_at)}`));
  if (row.written_by) {
    meta.appendChild(document.createTextNode(" · written by "));
    meta.appendChild(el("span", { class: "writer" }, row.written_by));
  }
  for (const uri of row.source_uris) {
    meta.appendChild(document.createTextNode(" · "));
    meta.appendChild(el("span", { class: "source" }, uri));
  }
  item.appendChild(meta);
  return item;
}

async function showPerson(did) {
  const panel = document.getElementById("person-panel");
  document.getElementById("search-results").hidden = true;
  for (const node of document.querySelectorAll(".person")) {
    node.classList.toggle("selected", node.dataset.did === did);
  }
  panel.replaceChildren(el("p", { class: "muted" }, "loading…"));
  let user;
  try {
    user = await getJSON(`/api/users/${encodeURIComponent(did)}`);
  } catch (error) {
    panel.replaceChildren(el("p", { class: "error" }, String(error.message)));
    return;
  }
  const parts = [el("h2", {}, user.label), el("div", { class: "meta" }, `${user.did} · ${user.namespace}`)];
  if (user.summary) parts.push(el("h3", {}, "summary"), el("p", { class: "summary" }, user.summary.content));
  if (user.block) parts.push(el("h3", {}, "block"), el("pre", { class: "block content" }, user.block));
  parts.push(el("h3", {}, `what phi believes (${user.observations.length})`));
  if (user.observations.length === 0) {
    parts.push(el("p", { class: "muted" }, "phi has extracted no observations about this person yet."));
  }
  const observations = el("ul", { class: "rows", id: "observations" });
  for (const obs of user.observations) {
    const item = rowItem(obs, "observation");
    if (obs.history.length) {
      const details = el("details");
      details.appendChild(el("summary", {}, `changed ${obs.history.length}×: what phi believed before`));
      for (const old of obs.history) details.appendChild(el("div", { class: "old" }, `${old.content} (${age(old.created_at)})`));
      item.appendChild(details);
    }
    observations.appendChild(item);
  }
  parts.push(observations, el("h3", {}, "recent exchanges"));
  const recent = el("ul", { class: "rows", id: "recent" });
  for (const row of user.recent) recent.appendChild(rowItem(row, "exchange"));
  parts.push(recent);
  panel.replaceChildren(...parts);
}

async function search(query) {
  const box = document.getElementById("search-results");
  box.hidden = false;
  box.replaceChildren(el("p", { class: "muted" }, "searching…"));
  let found;
  try {
    found = await getJSON(`/api/memory/search?q=${encodeURIComponent(query)}&limit=15`);
  } catch (error) {
    box.replaceChildren(el("p", { class: "error" }, String(error.message)));
    return;
  }
  const list = el("ul", { class: "rows" });
  for (const hit of found.results) {
    const item = rowItem(hit, "result");
    const where = el("div", { class: "meta" }, `${hit.namespace} · found by ${hit.matched_by} · score ${hit.score.toFixed(3)}`);
    item.appendChild(where);
    if (hit.namespace.startsWith(USER_NAMESPACE_PREFIX)) {
      item.style.cursor = "pointer";
      item.addEventListener("click", () => showPerson(hit.namespace.slice(USER_NAMESPACE_PREFIX.length)));
    }
    list.appendChild(item);
  }
  const parts = [el("h3", {}, `${found.results.length} results for “${query}”`), list];
  if (found.unembedded) {
    parts.push(el("p", { class: "muted" }, `${found.unembedded} rows in this scope are not embedded yet: search by meaning cannot see them until they are (search by words already finds them).`));
  }
  box.replaceChildren(...parts);
}

document.getElementById("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const query = document.getElementById("search-input").value.trim();
  if (query) search(query);
});

getJSON("/api/memory/graph").then(drawGraph).catch((error) => {
  document.getElementById("graph-status").textContent = `could not load the graph: ${error.message}`;
});
