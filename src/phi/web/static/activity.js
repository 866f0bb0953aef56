// phi's activity page: the run journal (/api/runs), one run in full (/api/runs/{id}) and the
// notifications failed runs left unanswered (/api/pending).
// Plain DOM, no build step; every text from a run goes through textContent, never innerHTML.
"use strict";

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function authHeaders() {
  const token = sessionStorage.getItem("phi-token");
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function getJSON(url) {
  let response = await fetch(url, { headers: authHeaders() });
  if (response.status === 401) {
    const token = prompt("This server needs its bearer token (PHI_WEB_TOKEN):");
    if (token) sessionStorage.setItem("phi-token", token);
    response = await fetch(url, { headers: authHeaders() });
  }
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.json();
}

async function showRun(runId) {
  const panel = document.getElementById("run-panel");
  panel.replaceChildren(el("p", { class: "muted" }, "loading…"));
  const run = await getJSON(`/api/runs/${encodeURIComponent(runId)}`);
  const parts = [
    el("h2", {}, `${run.entry} · ${run.outcome}`),
    el("p", { class: "meta" }, `${run.started_at} · ${run.seconds}s · ${run.model ?? "?"} · ` +
      `${run.requests} requests · ${run.input_tokens}+${run.output_tokens} tokens`),
    el("p", { class: "content" }, run.output),
    el("h3", {}, `tool calls (${run.tool_calls.length})`),
  ];
  const calls = el("ul", { class: "rows" });
  for (const call of run.tool_calls) {
    const li = el("li");
    li.append(el("div", {}, `${call.tool}(${call.args}) → ${call.outcome}`));
    li.append(el("div", { class: "content meta" }, call.result));
    calls.append(li);
  }
  const prompt = el("details");
  prompt.append(el("summary", {}, `system prompt (sha256 ${run.prompt_hash.slice(0, 12)}…)`));
  prompt.append(el("pre", { class: "content" }, run.system_prompt));
  panel.replaceChildren(...parts, calls, prompt);
}

// Notifications failed runs left unanswered (/api/pending): waiting for a retry, or set aside.
async function showPending() {
  const status = document.getElementById("pending-status");
  const list = document.getElementById("pending");
  try {
    const pending = await getJSON("/api/pending");
    const aside = pending.filter((p) => p.status === "set-aside").length;
    status.textContent = pending.length
      ? `${pending.length - aside} waiting for a retry after a failed run, ${aside} set aside`
      : "";
    for (const p of pending) {
      const li = el("li", { class: "person" });
      li.append(el("div", {}, `${p.status} · ${p.reason} from @${p.author_handle} · ${p.text}`));
      const when = p.retry_at ? `next try ${p.retry_at}` : `set aside ${p.last_failed_at}`;
      li.append(el("div", { class: "meta" },
        `${p.failures} failed run(s) · ${when} · ${p.uri} · last error: ${p.error}`));
      list.append(li);
    }
  } catch (error) {
    status.textContent = String(error);
  }
}

async function main() {
  await showPending();  // first: a token prompt, if any, comes once
  const status = document.getElementById("runs-status");
  const list = document.getElementById("runs");
  try {
    const runs = await getJSON("/api/runs?limit=100");
    status.textContent = runs.length ? `${runs.length} latest runs` : "no runs journalled yet";
    for (const run of runs) {
      const li = el("li", { class: "person" });
      li.append(el("div", {}, `${run.entry} · ${run.outcome} · ${run.output}`));
      li.append(el("div", { class: "meta" },
        `${run.started_at} · ${run.seconds}s · tools: ${run.tools.join(", ") || "none"}`));
      li.addEventListener("click", () => showRun(run.run_id));
      list.append(li);
    }
  } catch (error) {
    status.textContent = String(error);
  }
}

main();
