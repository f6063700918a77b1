// palaestra view: the page. Plain JavaScript, no build step, no network but this server.
// Every text from a rollout is put in the page as text (textContent), never as HTML: a model's
// output cannot inject markup. The state of each view lives in the URL's hash
// (#/run/0?kind=failed, #/rollout/0/17, #/tokens/0/17, #/compare, #/pair/3/0) so a reload, the
// back button and a shared link show the same thing.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token");
const PAGE = 100;
let RUNS = null; // /api/runs, fetched once

// --- helpers ------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== null && value !== undefined && value !== "") query.set(key, value);
  }
  const url = path + (query.toString() ? "?" + query : "");
  const headers = TOKEN ? { Authorization: "Bearer " + TOKEN } : {};
  const answer = await fetch(url, { headers });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || answer.statusText);
  return body;
}

function fmt(value, digits = 3) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number") {
    if (Number.isInteger(value)) return value.toLocaleString("en");
    return value.toFixed(digits).replace(/\.?0+$/, "") || "0";
  }
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function rewardClass(reward) {
  if (reward === null || reward === undefined) return "";
  return reward >= 1 ? "reward-1" : reward <= 0 ? "reward-0" : "reward-mid";
}

function pretty(text) {
  // JSON arguments and outputs indented; anything else as it is
  if (typeof text !== "string") return JSON.stringify(text, null, 2);
  try {
    const parsed = JSON.parse(text);
    if (parsed !== null && typeof parsed === "object") return JSON.stringify(parsed, null, 2);
  } catch (e) { /* not JSON */ }
  return text;
}

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query] = raw.split("?");
  return { parts: path.split("/").filter(Boolean), params: new URLSearchParams(query || "") };
}

function go(parts, params) {
  const query = params && params.toString() ? "?" + params : "";
  location.hash = "#/" + parts.join("/") + query;
}

function runLabel(i) { return RUNS.length > 1 ? (i === 0 ? "A" : "B") : ""; }

function card(key, label, value, sub) {
  return h("div", { class: "card", "data-k": key },
    h("div", { class: "label" }, label), h("div", { class: "value" }, value),
    sub ? h("div", { class: "sub" }, sub) : null);
}

function kv(entries) {
  const grid = h("div", { class: "kv" });
  for (const [k, v] of entries) grid.append(h("div", { class: "k" }, k), h("div", { class: "v" }, fmt(v)));
  return grid;
}

function show(...nodes) {
  const main = document.getElementById("main");
  main.replaceChildren(...nodes.flat());
}

function nav(active) {
  const links = RUNS.map((run, i) => h("a", {
    href: "#/run/" + i, class: active === "run" + i ? "active" : null, title: run.path,
  }, (RUNS.length > 1 ? runLabel(i) + ": " : "") + run.name));
  if (RUNS.length > 1) {
    links.push(h("a", { href: "#/compare", class: active === "compare" ? "active" : null }, "side by side"));
  }
  document.getElementById("nav").replaceChildren(...links);
}

// --- the run: summary and table -----------------------------------------------------------

function summaryCards(run, runNumber, figuresOpen = true) {
  const s = run.summary;
  const kinds = Object.entries(s.failed_by_kind).map(([kind, count]) =>
    h("span", { class: "chip bad", "data-kind": kind }, `${kind} ${count}`));
  const id = run.identity;
  const cards = [
    card("rows", "rollouts", fmt(s.rows), `${fmt(s.tasks)} tasks`),
    card("scored", "scored", fmt(s.scored)),
    card("failed", "failed", fmt(s.failed), kinds.length ? h("span", {}, kinds) : "none"),
    card("mean_reward", "mean reward", fmt(s.mean_reward, 4), "over scored rollouts"),
    card("mean_tokens", "mean tokens", fmt(s.mean_tokens, 1)),
    card("mean_seconds", "mean time", s.mean_seconds === null ? "–" : fmt(s.mean_seconds, 2) + " s"),
  ];
  if (s.truncated) cards.push(card("truncated", "hit max steps", fmt(s.truncated)));
  if (id) cards.push(card("identity", "run", id.env || "?", `${id.agent || "?"} · ${id.model || "?"}`));
  const notes = [];
  if (s.unreadable_count) {
    notes.push(h("p", { class: "error" }, `${s.unreadable_count} unreadable lines, e.g. ` +
      s.unreadable.slice(0, 3).map((u) => `${u.file}:${u.line} (${u.why})`).join("; ")));
  }
  for (const file of s.torn) notes.push(h("p", { class: "muted" }, `${file}: the last line is incomplete (still being written?) and not shown`));
  const root = h("div", { class: "summary", "data-run": runNumber }, h("div", { class: "cards", id: "summary" }, cards), notes);
  root.append(figuresBlock(runNumber, root, figuresOpen));
  return root;
}

function interval(i) { return i ? `[${fmt(i.low, 4)}, ${fmt(i.high, 4)}]` : "–"; }

function figuresBlock(runNumber, root, open) {
  // palaestra.evaluate's figures (a second pass over the run) arrive after the table
  const box = h("details", { class: "figures", open }, h("summary", {}, "figures with 95% intervals (palaestra.evaluate)"),
    h("p", { class: "muted" }, "computing…"));
  api("/api/figures", { run: runNumber }).then((body) => {
    if (body.error) { box.replaceChildren(box.firstChild, h("p", { class: "muted", id: "figures-error" }, body.error)); return; }
    const rows = body.figures.map((f) => h("tr", { "data-figure": f.name },
      h("td", {}, f.name), h("td", { class: "num" }, fmt(f.value, 4)), h("td", { class: "num" }, interval(f.interval)),
      h("td", { class: "muted" }, f.interval ? f.interval.method : ""),
      h("td", { class: "num" }, `${fmt(f.tasks)} tasks / ${fmt(f.rollouts)} rollouts`),
      h("td", { class: "muted" }, f.reading + (f.note ? "; " + f.note : ""))));
    box.replaceChildren(box.firstChild, h("table", { class: "rows figures-table" },
      h("thead", {}, h("tr", {}, ["figure", "value", "95% interval", "method", "n", "reading"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows)));
    const mean = body.figures.find((f) => f.name === "mean reward");
    const sub = root.querySelector("[data-k=mean_reward] .sub");
    if (mean && mean.interval && sub) sub.textContent = `${interval(mean.interval)} ${mean.interval.method}`;
  }).catch((error) => box.replaceChildren(box.firstChild, h("p", { class: "error" }, error.message)));
  return box;
}

function comparisonBlock() {
  const box = h("details", { class: "figures", open: true, id: "comparison" }, h("summary", {}, "B against A over the paired tasks (palaestra.evaluate)"),
    h("p", { class: "muted" }, "computing…"));
  api("/api/comparison").then((c) => {
    if (c.error) { box.replaceChildren(box.firstChild, h("p", { class: "muted" }, c.error)); return; }
    const rows = c.differences.map((d) => h("tr", { "data-figure": d.name },
      h("td", {}, d.name), h("td", { class: "num" }, fmt(d.a, 4)), h("td", { class: "num" }, fmt(d.b, 4)),
      h("td", { class: "num " + (d.difference > 0 ? "reward-1" : d.difference < 0 ? "reward-0" : "") }, d.difference === null ? "–" : (d.difference > 0 ? "+" : "") + fmt(d.difference, 4)),
      h("td", { class: "num" }, interval(d.interval)),
      h("td", { class: "num" }, d.test ? fmt(d.test.p_value, 4) : "–"), h("td", { class: "muted" }, d.test ? d.test.method : ""),
      h("td", { class: "num" }, fmt(d.tasks))));
    const flips = [];
    if (c.to_pass.length) flips.push(h("span", { class: "chip good" }, `${c.to_pass.length} tasks pass in B only`));
    if (c.to_fail.length) flips.push(h("span", { class: "chip bad" }, `${c.to_fail.length} tasks pass in A only`));
    if (c.mismatched.length) flips.push(h("span", { class: "chip warn" }, `${c.mismatched.length} task indices with different prompts (not paired)`));
    box.replaceChildren(box.firstChild, h("table", { class: "rows figures-table" },
      h("thead", {}, h("tr", {}, ["figure", "A", "B", "B − A", "95% interval", "p", "test", "tasks"].map((t) => h("th", {}, t)))),
      h("tbody", {}, rows)), h("p", {}, `${fmt(c.paired)} tasks paired `, flips));
  }).catch((error) => box.replaceChildren(box.firstChild, h("p", { class: "error" }, error.message)));
  return box;
}

async function renderRun(runNumber, params) {
  nav("run" + runNumber);
  const run = RUNS[runNumber];
  const value = (name) => params.get(name) || "";
  const update = (name, v) => {
    const next = new URLSearchParams(params);
    if (v === "" || v === null) next.delete(name); else next.set(name, v);
    if (name !== "offset") next.delete("offset");
    go(["run", runNumber], next);
  };
  let timer = null;
  const field = (name, label, attrs) => h("label", {}, label, h("input", {
    id: "f-" + name, value: value(name), ...attrs,
    onchange: (e) => update(name, e.target.value.trim()),
    oninput: attrs.class === "text" ? (e) => {
      clearTimeout(timer); timer = setTimeout(() => update(name, e.target.value.trim()), 400);
    } : null,
  }));
  const select = (name, label, options) => {
    const el = h("select", { id: "f-" + name, onchange: (e) => update(name, e.target.value) },
      options.map(([v, text]) => h("option", { value: v, selected: value(name) === v }, text)));
    return h("label", {}, label, el);
  };
  const kinds = [["", "all"], ["scored", "scored"], ["failed", "failed"], ...run.kinds.map((k) => [k, k])];
  const filters = h("div", { class: "filters" },
    field("reward_min", "reward ≥", { class: "num", type: "number", step: "any" }),
    field("reward_max", "reward ≤", { class: "num", type: "number", step: "any" }),
    select("kind", "status", kinds),
    field("task", "task", { class: "num", type: "number", min: "0" }),
    field("q", "text", { class: "text", type: "search", placeholder: "anywhere in the row" }),
    select("sort", "sort by", [["", "file order"], ["reward", "reward"], ["time", "time"], ["tokens", "tokens"], ["task", "task"]]),
    select("order", "order", [["", "ascending"], ["desc", "descending"]]),
    h("button", { id: "f-clear", onclick: () => go(["run", runNumber]) }, "clear"));
  const status = h("div", { class: "pager", id: "pager" }, h("span", { class: "muted" }, "loading…"));
  const table = h("table", { class: "rows", id: "rows-table" });
  show(h("h2", {}, (RUNS.length > 1 ? runLabel(runNumber) + ": " : "") + run.path), summaryCards(run, runNumber), filters, status, table);

  const offset = Number(value("offset") || 0);
  let page;
  try {
    page = await api("/api/rows", {
      run: runNumber, offset, limit: PAGE, sort: value("sort"), order: value("order"),
      reward_min: value("reward_min"), reward_max: value("reward_max"), kind: value("kind"),
      task: value("task"), q: value("q"),
    });
  } catch (error) {
    status.replaceChildren(h("span", { class: "error", id: "rows-error" }, error.message));
    return;
  }
  const sortBy = (key) => () => {
    const next = new URLSearchParams(params);
    const same = value("sort") === key;
    next.set("sort", key);
    if (same && value("order") !== "desc") next.set("order", "desc"); else next.delete("order");
    next.delete("offset");
    go(["run", runNumber], next);
  };
  const arrow = (key) => value("sort") === key ? (value("order") === "desc" ? " ▼" : " ▲") : "";
  const sortable = (key, label) => h("th", { class: "num sortable", onclick: sortBy(key), title: "sort by " + label }, label + arrow(key));
  table.append(h("thead", {}, h("tr", {},
    h("th", { class: "num" }, "#"),
    sortable("task", "task"),
    h("th", { class: "num" }, "rollout"),
    sortable("reward", "reward"),
    h("th", {}, "status"),
    sortable("time", "time (s)"),
    sortable("tokens", "tokens"),
    h("th", {}, "prompt, or why it failed"))));
  const body = h("tbody", {});
  for (const row of page.rows) {
    const status = row.kind
      ? h("span", { class: "chip bad" }, row.kind)
      : h("span", { class: "chip good" }, "scored");
    body.append(h("tr", { "data-n": row.n, onclick: () => go(["rollout", runNumber, row.n]) },
      h("td", { class: "num" }, row.n),
      h("td", { class: "num" }, fmt(row.task)),
      h("td", { class: "num" }, fmt(row.rollout)),
      h("td", { class: "num " + rewardClass(row.reward) }, fmt(row.reward, 4)),
      h("td", {}, status, row.truncated ? h("span", { class: "chip warn" }, "max steps") : null),
      h("td", { class: "num" }, row.seconds === null ? "–" : row.seconds.toFixed(2)),
      h("td", { class: "num" }, fmt(row.tokens)),
      h("td", { class: "preview", title: row.preview }, row.preview)));
  }
  table.append(body);
  const first = page.matched ? offset + 1 : 0;
  const last = offset + page.rows.length;
  const pageTo = (o) => () => update("offset", String(o));
  status.replaceChildren(
    h("button", { id: "prev", disabled: offset === 0, onclick: pageTo(Math.max(0, offset - PAGE)) }, "‹ prev"),
    h("span", { id: "matched" }, `${fmt(first)}–${fmt(last)} of ${fmt(page.matched)} matching (${fmt(page.total)} rows)`),
    h("button", { id: "next", disabled: last >= page.matched, onclick: pageTo(offset + PAGE) }, "next ›"));
}

// --- one rollout --------------------------------------------------------------------------

// Who produced an output item, and whether its tokens are trained on (the policy's alone).
const PRODUCED_BY = { policy: "policy", tool: "tool", user: "simulated user", environment: "environment" };

function producerChip(item) {
  if (!item.producer) return null;
  const label = PRODUCED_BY[item.producer] || item.producer;
  return h("span", {
    class: "chip producer " + (item.trainable ? "trained" : "untrained"),
    "data-producer": item.producer,
    title: item.trainable ? "produced by the policy: its tokens are in the loss" : "not produced by the policy: never in the loss",
  }, `by ${label}${item.trainable ? " · trained" : ""}`);
}

function conversation(view) {
  const box = h("div", { class: "convo" });
  for (const item of view.items) {
    const tokens = item.tokens
      ? h("span", { class: "tok chip", title: "token ids on this item" }, `${item.tokens.prompt} prompt + ${item.tokens.generated} generated tokens`)
      : null;
    const by = producerChip(item);
    if (item.kind === "message") {
      const cls = item.simulated ? "simulated" : item.role;
      const who = item.producer === "user" ? "user (simulated)" : item.producer === "environment" ? "environment" : item.role;
      box.append(h("div", { class: "item message " + cls, "data-role": item.role },
        h("div", { class: "who" }, who,
          item.simulated ? h("span", { class: "chip sim" }, item.producer === "environment" ? "environment observation" : "simulated user turn") : null,
          item.origin === "task" ? h("span", { class: "chip" }, "task") : null, by, tokens),
        h("div", { class: "body" }, item.text)));
    } else if (item.kind === "reasoning") {
      box.append(h("div", { class: "item reasoning" }, h("div", { class: "who" }, "reasoning", by, tokens),
        h("div", { class: "body" }, item.text || "(no text)")));
    } else if (item.kind === "function_call") {
      box.append(h("div", { class: "item function_call", "data-call": item.call_id },
        h("div", { class: "who" }, "tool call → ", h("span", { class: "tool-name" }, item.name), h("span", { class: "muted" }, item.call_id), by, tokens),
        h("pre", { class: "arguments" }, pretty(item.arguments))));
    } else if (item.kind === "function_call_output") {
      box.append(h("div", { class: "item function_call_output", "data-call": item.call_id },
        h("div", { class: "who" }, "tool output ←", h("span", { class: "tool-name" }, item.name || "?"), h("span", { class: "muted" }, item.call_id), by),
        h("pre", { class: "output" }, pretty(item.output))));
    } else {
      box.append(h("div", { class: "item other" }, h("div", { class: "who" }, item.kind, tokens),
        h("pre", {}, JSON.stringify(item.raw, null, 2))));
    }
  }
  return box;
}

function verdictSection(view) {
  if (view.failure) {
    const f = view.failure;
    return h("section", { class: "failure", id: "failure" }, h("h3", {}, "failure"),
      h("div", { class: "big", id: "failure-kind" }, f.kind),
      h("p", { id: "failure-reason" }, f.reason),
      kv([["masked", f.masked], ...(view.input_source ? [["task line", view.input_source]] : [])]));
  }
  const v = view.verdict;
  const parts = [h("h3", {}, "verdict"), h("div", { class: "big " + rewardClass(v.reward), id: "reward" }, fmt(v.reward, 4))];
  if (v.components) parts.push(h("div", { class: "muted" }, "reward components"), kv(Object.entries(v.components)));
  if (v.step_rewards) parts.push(h("div", { class: "muted" }, "step rewards"), h("div", { class: "v" }, v.step_rewards.map((r) => fmt(r)).join(", ")));
  const metrics = Object.entries(v.metrics);
  if (metrics.length) parts.push(h("div", { class: "muted" }, "verifier metrics"), kv(metrics));
  return h("section", { id: "verdict" }, parts);
}

function timingsSection(view) {
  const entries = Object.entries(view.timings);
  const total = view.timings.total || Math.max(0, ...entries.map(([, s]) => s)) || 1;
  const bars = h("div", { class: "bars" });
  for (const [phase, seconds] of entries) {
    bars.append(h("div", {}, phase), h("div", {}, h("div", { class: "bar", style: `width:${Math.min(100, 100 * seconds / total)}%` })),
      h("div", { class: "t" }, seconds < 0.01 ? (seconds * 1000).toFixed(2) + " ms" : seconds.toFixed(3) + " s"));
  }
  const facts = Object.entries(view.facts);
  return h("section", { id: "timings" }, h("h3", {}, "timings"), entries.length ? bars : h("p", { class: "muted" }, "none recorded"),
    facts.length ? kv(facts) : null);
}

function usageSection(view) {
  const u = view.usage || {};
  const rows = [["input", u.input_tokens], ["output", u.output_tokens], ["total", u.total_tokens]];
  if (u.input_tokens_details && u.input_tokens_details.cached_tokens) rows.push(["cached", u.input_tokens_details.cached_tokens]);
  if (u.output_tokens_details && u.output_tokens_details.reasoning_tokens) rows.push(["reasoning", u.output_tokens_details.reasoning_tokens]);
  rows.push(["model", view.model]);
  if (view.status && view.status !== "completed") rows.push(["status", view.status]);
  if (view.incomplete) rows.push(["incomplete", view.incomplete]);
  return h("section", { id: "usage" }, h("h3", {}, "token usage"), kv(rows));
}

function taskSection(view) {
  const entries = [["task", view.task_index], ["rollout", view.rollout_index], ["agent", view.agent],
    ["tools offered", view.tools.join(", ") || "–"], ...Object.entries(view.task_fields)];
  return h("section", { id: "task" }, h("h3", {}, "task"), kv(entries));
}

function rolloutTabs(runNumber, n, active, view) {
  const tab = (name, label) => h("a", { href: `#/${name}/${runNumber}/${n}`, class: active === name ? "active" : null, id: "tab-" + name }, label);
  return h("div", { class: "tabs" }, tab("rollout", "conversation"),
    view.token_calls ? tab("tokens", `tokens (${view.token_calls} calls)`) : null, tab("raw", "row JSON"));
}

function crumbs(runNumber, n, view) {
  const step = (d) => n + d >= 0 && n + d < view.rows ? h("a", { href: `#/${parseHash().parts[0]}/${runNumber}/${n + d}`, id: d < 0 ? "prev-rollout" : "next-rollout" }, d < 0 ? "‹ previous" : "next ›") : null;
  const label = (RUNS.length > 1 ? runLabel(runNumber) + " · " : "") + `row ${n} · task ${fmt(view.task_index)} · rollout ${fmt(view.rollout_index)}`;
  return h("div", { class: "crumbs" }, h("a", { href: "#/run/" + runNumber }, "← table"), step(-1), step(1),
    h("strong", { id: "rollout-title" }, label), h("span", { class: "muted" }, `${view.file}:${view.line}`));
}

async function renderRollout(runNumber, n, tab) {
  nav("run" + runNumber);
  const view = await api("/api/rollout/" + n, { run: runNumber });
  const side = h("div", { class: "side" }, verdictSection(view), timingsSection(view), usageSection(view), taskSection(view));
  let content;
  if (tab === "tokens") content = await tokenView(runNumber, n);
  else if (tab === "raw") content = h("pre", { class: "json", id: "raw" }, "loading…");
  else content = conversation(view);
  show(crumbs(runNumber, n, view), rolloutTabs(runNumber, n, tab, view), h("div", { class: "layout" }, h("div", {}, content), side));
  if (tab === "raw") {
    // the row exactly as stored, token arrays included
    const raw = await api("/api/rollout/" + n, { run: runNumber, raw: 1 });
    document.getElementById("raw").textContent = JSON.stringify(raw.row, null, 2);
  }
}

async function tokenView(runNumber, n) {
  const t = await api("/api/tokens/" + n, { run: runNumber });
  const box = h("div", { id: "tokens" });
  box.append(h("div", { class: "legend" },
    h("span", {}, h("span", { class: "swatch", style: "background:#c9ecd3" }), "trained on (generated by the policy)"),
    h("span", {}, h("span", { class: "swatch", style: "background:#eceff3" }), "not trained on (prompt, tool output, user, template)"),
    h("span", { id: "token-counts" }, `${fmt(t.trained)} of ${fmt(t.tokens)} tokens trained on`),
    h("span", { class: t.contiguous ? "chip good" : "chip bad", id: "contiguity" }, t.contiguous ? "contiguous" : "not contiguous")));
  if (t.reason) box.append(h("p", { class: t.contiguous ? "muted" : "error", id: "token-reason" }, t.reason));
  if (!t.pieces && t.sequences.length) box.append(h("p", { class: "muted", id: "token-ids-note" }, "token ids shown as numbers: the viewer decodes only the embedded model's tokens"));
  for (const seq of t.sequences) {
    box.append(h("h3", {}, seq.label));
    const tokens = h("div", { class: "tokens" });
    const spans = [];
    seq.ids.forEach((id, i) => {
      const piece = t.pieces ? t.pieces[String(id)] : null;
      const text = piece === null || piece === undefined ? String(id) : piece.replace(/\n/g, "⏎\n");
      const special = piece && /^<\|.*\|>$/.test(piece);
      const title = `#${i} id ${id}` + (seq.mask[i] ? ` · log-prob ${seq.log_probs[i].toFixed(4)}` : "");
      const broken = seq.break_at === i ? " break" : "";
      spans.push(h("span", { class: `t t${seq.mask[i]}` + (special ? " special" : "") + (t.pieces ? "" : " sep") + broken, title: broken ? title + " · the first token that differs from the previous call" : title }, text));
    });
    tokens.append(...spans);
    box.append(tokens);
  }
  return box;
}

// --- two runs side by side ----------------------------------------------------------------

async function renderCompare(params) {
  nav("compare");
  const only = params.get("only") || "";
  const sort = params.get("sort") || "";
  const offset = Number(params.get("offset") || 0);
  const set = (name, v) => { const next = new URLSearchParams(params); if (v) next.set(name, v); else next.delete(name); if (name !== "offset") next.delete("offset"); go(["compare"], next); };
  const summaries = h("div", { class: "pair" }, RUNS.map((run, i) => h("div", {}, h("h2", {}, runLabel(i) + ": " + run.name), summaryCards(run, i, false))));
  const filters = h("div", { class: "filters" },
    h("label", {}, "show", h("select", { id: "f-only", onchange: (e) => set("only", e.target.value) },
      [["", "every pair"], ["different", "where they differ"], ["both", "in both runs"]].map(([v, t]) => h("option", { value: v, selected: only === v }, t)))),
    h("label", {}, "sort by", h("select", { id: "f-pair-sort", onchange: (e) => set("sort", e.target.value) },
      [["", "task"], ["delta", "largest reward difference"]].map(([v, t]) => h("option", { value: v, selected: sort === v }, t)))));
  const status = h("div", { class: "pager", id: "pager" });
  const table = h("table", { class: "rows", id: "pairs-table" });
  show(summaries, comparisonBlock(), filters, status, table);
  const page = await api("/api/pairs", { offset, limit: PAGE, only, sort });
  const st = page.stats;
  status.before(h("div", { class: "cards", id: "pair-stats" },
    card("both", "tasks in both runs", fmt(st.both), `${fmt(st.only_a)} only in A, ${fmt(st.only_b)} only in B`),
    card("b_better", "B better", fmt(st.b_better)), card("a_better", "A better", fmt(st.a_better)), card("ties", "same reward", fmt(st.ties)),
    card("mean_delta", "mean B − A", st.mean_delta === null ? "–" : (st.mean_delta > 0 ? "+" : "") + fmt(st.mean_delta, 4), "over pairs both scored")));
  const cell = (e) => e ? (e.kind ? h("span", { class: "chip bad" }, e.kind) : h("span", { class: rewardClass(e.reward) }, fmt(e.reward, 4))) : h("span", { class: "muted" }, "absent");
  table.append(h("thead", {}, h("tr", {}, h("th", { class: "num" }, "task"), h("th", { class: "num" }, "rollout"),
    h("th", {}, "A: " + RUNS[0].name), h("th", {}, "B: " + RUNS[1].name), h("th", { class: "num" }, "B − A"))));
  const body = h("tbody", {});
  for (const p of page.pairs) {
    body.append(h("tr", { onclick: () => go(["pair", p.task, p.rollout]) },
      h("td", { class: "num" }, p.task), h("td", { class: "num" }, p.rollout), h("td", {}, cell(p.a)), h("td", {}, cell(p.b)),
      h("td", { class: "num " + (p.delta > 0 ? "reward-1" : p.delta < 0 ? "reward-0" : "") }, p.delta === null ? "–" : (p.delta > 0 ? "+" : "") + fmt(p.delta, 4))));
  }
  table.append(body);
  const last = offset + page.pairs.length;
  status.replaceChildren(
    h("button", { disabled: offset === 0, onclick: () => set("offset", String(Math.max(0, offset - PAGE))) }, "‹ prev"),
    h("span", { id: "matched" }, `${fmt(page.matched ? offset + 1 : 0)}–${fmt(last)} of ${fmt(page.matched)} pairs (${fmt(page.total)} in all)`),
    h("button", { disabled: last >= page.matched, onclick: () => set("offset", String(offset + PAGE)) }, "next ›"));
}

async function renderPair(task, rollout) {
  nav("compare");
  const page = await api("/api/pairs", { task, rollout });
  const pair = page.pairs[0];
  if (!pair) { show(h("p", { class: "error" }, `no rollout of task ${task} (rollout ${rollout}) in either run`)); return; }
  const columns = await Promise.all([pair.a, pair.b].map(async (entry, i) => {
    const head = h("div", { class: "head" }, h("strong", {}, runLabel(i) + ": " + RUNS[i].name));
    if (!entry) return h("div", { "data-run": i }, head, h("p", { class: "muted" }, "this run has no such rollout"));
    const view = await api("/api/rollout/" + entry.n, { run: i });
    head.append(" · ", h("a", { href: `#/rollout/${i}/${entry.n}` }, `row ${entry.n}`));
    return h("div", { "data-run": i }, head, h("div", { class: "side" }, verdictSection(view)), conversation(view));
  }));
  show(h("div", { class: "crumbs" }, h("a", { href: "#/compare" }, "← pairs"), h("strong", { id: "pair-title" }, `task ${task} · rollout ${rollout}`)),
    h("div", { class: "pair", id: "pair" }, columns));
}

// --- a run still being written -------------------------------------------------------------

async function poll() {
  // a collection still writing its files: say how many rows arrived, redraw when asked
  if (RUNS === null || document.visibilityState !== "visible") return;
  let fresh;
  try { fresh = (await api("/api/runs")).runs; } catch (error) { return; }
  const changed = fresh.some((run, i) => run.summary.rows !== RUNS[i].summary.rows || run.generation !== RUNS[i].generation);
  const live = document.getElementById("live");
  if (!changed) { live.replaceChildren(); return; }
  const added = fresh.reduce((sum, run, i) => sum + run.summary.rows - RUNS[i].summary.rows, 0);
  const renumbered = fresh.some((run, i) => run.generation !== RUNS[i].generation);
  const label = renumbered ? "the files were rewritten" : `${added} new rollout${added === 1 ? "" : "s"}`;
  live.replaceChildren(h("button", { id: "live-refresh", onclick: () => { RUNS = fresh; live.replaceChildren(); document.body.dataset.ready = ""; route(); } }, label + " · show"));
}
window.palaestraPoll = poll;
setInterval(poll, 5000);

// --- routing ------------------------------------------------------------------------------

async function route() {
  try {
    if (RUNS === null) RUNS = (await api("/api/runs")).runs;
    const { parts, params } = parseHash();
    const number = (i) => Number(parts[i] || 0);
    if (parts[0] === "rollout" || parts[0] === "tokens" || parts[0] === "raw") await renderRollout(number(1), number(2), parts[0]);
    else if (parts[0] === "compare" && RUNS.length > 1) await renderCompare(params);
    else if (parts[0] === "pair" && RUNS.length > 1) await renderPair(number(1), number(2));
    else await renderRun(parts[0] === "run" ? number(1) : 0, params);
    document.body.dataset.ready = location.hash || "#/";
  } catch (error) {
    show(h("p", { class: "error", id: "error" }, error.message));
    document.body.dataset.ready = "error";
  }
}

window.addEventListener("hashchange", () => { document.body.dataset.ready = ""; route(); });
route();
