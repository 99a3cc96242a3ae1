// The Strata inspector: a page over the HTTP JSON operations of `strata serve` (POST /v1/<op>).
// No build step, no dependencies (ES modules from this origin). Memories are written by agents: every
// text is put into the page as text nodes (never as HTML). The bearer token, when the server has one,
// is kept in sessionStorage (this tab only) and sent as an Authorization header; never in a URL or a
// cookie. What the token may do (whoami) decides which actions the page offers; the server checks
// every call all the same.

import { activityChart, graph, holdings } from "./charts.js";
import {
  $, KINDS, MATURITIES, STATUSES, ago, clock, code, day, el, kindBadge, kindName, meter, num, options, plural, short,
  statusBadge, when,
} from "./dom.js";
import { sentence } from "./sentences.js";

const TOKEN_KEY = "strata.token";
const ORDERS = ["newest", "oldest", "truth", "utility"];
const PAGE = 50;
const WIDE = window.matchMedia("(min-width: 1100px)"); // the list and a memory side by side
const README = "/inspector/readme#:~:text=Connect%20an%20agent";

// --- the API ---------------------------------------------------------------------------------

class Unauthorized extends Error {}

async function call(op, body) {
  const headers = { "Content-Type": "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(`/v1/${op}`, {
    method: "POST", headers, body: JSON.stringify(body), credentials: "omit", cache: "no-store",
  });
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (response.status === 401) {
    forgetToken();
    $("token-form").hidden = false;
    throw new Unauthorized(token ? "the token was refused (unknown or revoked): enter a token" : "this server needs a token");
  }
  if (!response.ok || !data || data.ok !== true) {
    const error = data && data.error;
    throw new Error(error ? `${error.code}: ${error.message}` : `HTTP ${response.status}`);
  }
  return data;
}

// --- who we are: the token's name, operations, repos and whether it may touch global memories ---

let me = null;

async function whoami() {
  if (!me) me = await call("whoami", {});
  $("who").hidden = !me.name;
  $("who").textContent = me.name ? `token ${me.name}: ${me.operations.join(", ")}` : "";
  $("who").title = $("who").textContent; // whole when the header cuts it short
  return me;
}

const may = (permission) => !!me && (me.operations.includes("operator") || me.operations.includes(permission));
const mayTouch = (m) => m.scope !== "global" || (!!me && me.global_memories);

function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  me = null;
  reposSeen.clear();
}

// --- where we are: #/<view>[/<id>]?repo=..&as_of=..&<view's own> ------------------------------

const LIST_PARAMS = ["q", "kind", "status", "maturity", "order", "offset"];

function route() {
  const [path, query] = (location.hash.replace(/^#/, "") || "/").split("?");
  const parts = path.split("/").filter(Boolean);
  return { view: parts[0] || "overview", id: parts[1] ? decodeURIComponent(parts[1]) : null,
           params: new URLSearchParams(query || "") };
}

function link(view, id, extra) {
  const now = route().params;
  const params = new URLSearchParams();
  for (const key of ["repo", "as_of"]) if (now.get(key)) params.set(key, now.get(key));
  for (const [key, value] of Object.entries(extra || {})) {
    if (value === null || value === undefined || value === "") params.delete(key);
    else params.set(key, String(value));
  }
  return `#/${view}${id ? "/" + encodeURIComponent(id) : ""}?${params}`;
}

const go = (view, id, extra) => { location.hash = link(view, id, extra); };
const memoryHref = (id) => link("memory", id);

function listParams(params) {
  return Object.fromEntries(LIST_PARAMS.map((k) => [k, params.get(k) || ""]));
}

function asOf(params) {
  const raw = (params.get("as_of") || "").trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (/(Z|[+-]\d\d:?\d\d)$/.test(raw)) return raw;
  const local = new Date(raw); // a time without a zone is the person's local time
  return Number.isNaN(local.getTime()) ? raw : local.toISOString();
}

function message(text) {
  $("message").hidden = !text;
  $("message").textContent = text || "";
}

function notice(text) {
  $("notice").hidden = !text;
  $("notice").textContent = text || "";
}

// --- the frame: repos, the view, errors --------------------------------------------------------

const VIEWS = { overview, memories, memory, timeline, sessions, review, read };
let renders = 0; // a render that a later one overtook (the hash moved on meanwhile) shows nothing

async function render() {
  const turn = ++renders;
  const { view, id, params } = route();
  const repo = params.get("repo") || "";
  const past = asOf(params);
  const shown = VIEWS[view] ? view : "overview";
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active",
    a.dataset.view === shown || (a.dataset.view === "memories" && shown === "memory")));
  $("as-of").value = params.get("as_of") || "";
  $("past").hidden = true; // shown again only for a moment the server accepts (showPast)
  message("");
  notice("");
  const main = $("main");
  main.removeAttribute("data-view"); // set again once this view is shown (what tests wait for)
  const show = (content, name) => {
    if (turn !== renders) return;
    main.replaceChildren(content);
    main.dataset.view = name;
  };
  try {
    await whoami();
    const repos = await loadRepos(repo, past);
    if (!repo) {
      if (repos.length) go(view, id, { repo: repos[0].repo_id });
      else show(emptyStore(), "empty");
      return;
    }
    if (!repos.some((r) => r.repo_id === repo)) { // a misspelled id is no valid empty repo
      show(unknownRepo(repo, repos, past), "unknown-repo");
      return;
    }
    document.querySelectorAll("nav a").forEach((a) => { a.href = link(a.dataset.view); });
    const ctx = { repo, past, params, id, readOnly: past !== undefined };
    show(await VIEWS[shown](ctx), shown);
    document.title = `${repo} · Strata inspector`;
    main.querySelector(".split .item.selected")?.scrollIntoView({ block: "nearest" }); // where it is in the list
  } catch (error) {
    if (turn !== renders) return;
    message(error.message);
    show(el("div"), "error");
  }
}

function showPast(point) {
  $("past").hidden = !point;
  if (point) $("past").textContent =
    `Viewing the store as of log position ${point.position} (${when(point.time)}): memories written later are absent, ` +
    "values are as they stood then. Actions are off.";
}

const reposSeen = new Map(); // by as_of: the repo list counts every memory, so it is asked once per moment

async function loadRepos(current, past) {
  const key = String(past ?? "");
  let data = reposSeen.get(key);
  if (!data) {
    data = await call("repos", { as_of: past });
    reposSeen.set(key, data);
  }
  const names = data.repos.map((r) => r.repo_id);
  if (current && !names.includes(current)) names.unshift(current);
  options($("repo"), names, current);
  $("repo").closest("label").hidden = !names.length;
  const waiting = data.repos.find((r) => r.repo_id === current);
  $("review-count").hidden = !waiting || !waiting.pending;
  $("review-count").textContent = waiting ? String(waiting.pending) : "";
  showPast(data.as_of);
  return data.repos;
}

function unknownRepo(repo, repos, past) {
  const limited = me && me.name && !me.operations.includes("operator");
  return el("section", { class: "empty", id: "unknown-repo" },
    el("h1", {}, `No memories under the repo id ${repo}`),
    el("p", { class: "lead" }, `No memory${limited ? " this token may see" : ""} is filed under this repo id` +
      `${past !== undefined ? " at this moment" : ""}: check its spelling. ` +
      (repos.length ? "The repo ids there are:" : "No repo has memories yet.")),
    repos.length ? el("ul", { class: "lines", id: "known-repos" }, repos.map((r) => el("li", {},
      el("a", { class: "repo-link", href: link("overview", null, { repo: r.repo_id }) }, r.repo_id)))) : null);
}

function emptyStore() {
  const limited = me && me.name && !me.operations.includes("operator");
  const server = `${location.origin}/mcp`;
  return el("section", { class: "empty", id: "empty-state" },
    el("img", { src: "/favicon.svg", alt: "", width: 56, height: 56 }),
    el("h1", {}, limited ? "No memories this token may see yet" : "Nothing is remembered yet"),
    el("p", { class: "lead" }, "Strata fills up as coding agents write down what they learn: the problem, what worked, " +
      "what failed and why. Connect an agent in the repository you work on, and this page shows its memory as it grows."),
    el("ol", { class: "steps" },
      el("li", {}, el("strong", {}, "Connect an agent"), " — in your repository, run:",
        el("pre", {}, el("code", { class: "id" }, `strata init claude-code --http ${server} --hooks`)),
        el("span", { class: "muted" }, "or ", code("codex"), ", ", code("cursor"), ", ", code("vscode"),
          ". The agent and its hooks read this server, which keeps the model loaded: every read and every " +
          "hook gets the whole engine.")),
      el("li", {}, el("strong", {}, "Work as usual"), " — the agent reads its memory when a problem starts and writes " +
        "what it learned at the end; you rate, correct and review it here."),
      el("li", {}, el("strong", {}, "Or see a filled page now"), " — a scripted session, written into this store under " +
        "the repo ", code("strata-demo"), ":", el("pre", {}, el("code", { class: "id" }, "strata demo --into-store")))),
    el("p", {}, el("a", { href: README, id: "readme-link", target: "_blank", rel: "noopener" },
      "Connecting an agent, in the README"), el("span", { class: "muted" }, " — every client, the hooks and the session protocol.")));
}

// --- overview -----------------------------------------------------------------------------------

function tile(label, value, note, href, extra) {
  const body = [el("span", { class: "tile-value" }, String(value)), el("span", { class: "tile-label" }, label),
                note ? el("span", { class: "tile-note" }, note) : null];
  return href ? el("a", { class: `tile ${extra || ""}`, href }, body) : el("div", { class: `tile ${extra || ""}` }, body);
}

function memoryLines(items, id, empty) {
  if (!items.length) return el("p", { class: "muted", id }, empty);
  return el("ul", { class: "lines", id }, items.map((m) => el("li", { "data-memory": m.memory_id },
    kindBadge(m.kind), " ", el("a", { href: memoryHref(m.memory_id) }, short(m.text, 160)),
    el("span", { class: "line-meta" }, m.status !== "active" ? statusBadge(m.status) : null,
      el("span", { class: "muted" }, ` truth ${num(m.truth_decayed)} · utility ${num(m.utility)}`)))));
}

async function overview({ repo, past }) {
  const [data, recent] = await Promise.all([
    call("overview", { repo_id: repo, days: 30, as_of: past }),
    call("timeline", { repo_id: repo, limit: 8, as_of: past }),
  ]);
  const count = (pred) => data.counts.filter(pred).reduce((s, c) => s + c.count, 0);
  const active = count((c) => c.status === "active");
  const written = data.activity.reduce((s, d) => s + d.written, 0);
  const maturity = MATURITIES.map((m) => `${count((c) => c.maturity === m && c.status === "active")} ${m}`).join(" · ");
  const known = new Map(data.review.concat(data.doubtful).map((m) => [m.memory_id, m]));
  // the contradictions compare the repo's newest memories with their neighbours (a few hundred ms on a large
  // store): the overview is shown without waiting for them, and their card takes its place when they come
  const settle = el("div", { id: "contradictions-slot", hidden: true });
  if (past === undefined) call("contradictions", { repo_id: repo, limit: 5 }).then((found) => {
    const card = contradictionsCard(found, repo, false, "overview-contradictions",
      `Contradicting memories (${found.pairs.length})`);
    if (card) settle.replaceWith(card);
    const shown = $("overview");
    if (shown) shown.dataset.contradictions = String(found.pairs.length);
  }).catch(() => null);
  return el("div", { id: "overview", class: "stack" },
    el("div", { class: "page-head" },
      el("h1", {}, repo),
      el("p", { class: "muted" }, data.as_of ? `As of log position ${data.as_of.position}` : `Log position ${data.position}`,
        data.global_memories ? ` · ${plural(data.global_memories, "global memory", "global memories")} shared with every repo` : "")),
    el("div", { class: "tiles" },
      tile("memories", data.total, `${active} active`, link("memories")),
      tile("written in 30 days", written, data.activity.length ? `last on ${day(data.activity[data.activity.length - 1].day)}` : "none", link("timeline")),
      tile("wait for review", data.pending, data.pending ? "a person decides" : "nothing waits", link("review"), data.pending ? "attention" : ""),
      tile("in doubt", data.in_doubt, "active, truth below 0.50", link("memories", null, { order: "truth", status: "active" }), data.in_doubt ? "attention" : "")),
    settle,
    el("div", { class: "columns" },
      el("div", { class: "column" },
      el("section", { class: "card" }, el("h2", {}, "What it holds"), holdings(data),
        el("p", { class: "muted small" }, `Active memories by maturity: ${maturity}.`)),
      el("section", { class: "card" }, el("h2", {}, "Needs a person"),
        el("h3", {}, data.pending ? `Waiting for review (${data.pending})` : "Waiting for review"),
        memoryLines(data.review, "overview-review", "Nothing waits for review."),
        data.pending > data.review.length ? el("p", {}, el("a", { href: link("review") }, "The whole review queue →")) : null,
        el("h3", {}, data.in_doubt ? `In doubt (${data.in_doubt})` : "In doubt"),
        memoryLines(data.doubtful, "overview-doubt", "No active memory has a truth below 0.50."))),
      el("div", { class: "column" },
      el("section", { class: "card" }, el("h2", {}, "Memories written per day"),
        el("p", { class: "muted small" }, `The last 30 days, in UTC, by kind.`), activityChart(data)),
      el("section", { class: "card" }, el("h2", {}, "Recent activity"),
        activityList(recent.events, { known: (id) => known.get(id) }, "recent"),
        el("p", { class: "more" }, el("a", { href: link("timeline") }, "The whole timeline →"))))));
}

// --- memories: the list, and a memory beside it where the page is wide -------------------------

async function memories(ctx) {
  const list = await memoryList(ctx, null);
  if (!WIDE.matches) return el("div", { class: "stack" }, list.filters, list.body);
  const first = list.data.items[0];
  const aside = first ? await memoryDetail({ ...ctx, id: first.memory_id }).catch(() => null) : null;
  list.body.querySelector(`[data-memory="${first && first.memory_id}"]`)?.classList.add("selected");
  return el("div", { class: "stack" }, list.filters, el("div", { class: "split" }, list.body,
    el("div", { class: "pane", id: "detail-pane" }, aside || el("p", { class: "muted pane-empty" }, "No memory to show."))));
}

async function memoryList({ repo, past, params }, selected) {
  const filter = listParams(params);
  const offset = Number(filter.offset || 0);
  const data = await call("memories", {
    repo_id: repo, query: filter.q || undefined, kinds: filter.kind ? [filter.kind] : [],
    statuses: filter.status ? [filter.status] : [], maturities: filter.maturity ? [filter.maturity] : [],
    order: filter.order || undefined, offset, limit: PAGE, as_of: past,
  });
  const search = el("input", { type: "search", id: "search", name: "q", value: filter.q, placeholder: "Search the text",
                                "aria-label": "Search the text" });
  const selects = {
    kind: options(el("select", { id: "filter-kind", "aria-label": "Kind" }), KINDS, filter.kind, "All kinds"),
    status: options(el("select", { id: "filter-status", "aria-label": "Status" }), STATUSES, filter.status, "All statuses"),
    maturity: options(el("select", { id: "filter-maturity", "aria-label": "Maturity" }), MATURITIES, filter.maturity, "All maturities"),
    order: options(el("select", { id: "filter-order", "aria-label": "Order" }), ORDERS, filter.order, filter.q ? "Best match" : "Newest"),
  };
  const apply = () => go("memories", null, { q: search.value.trim(), kind: selects.kind.value,
    status: selects.status.value, maturity: selects.maturity.value, order: selects.order.value, offset: 0 });
  Object.values(selects).forEach((s) => s.addEventListener("change", apply));
  const filters = el("form", { class: "filters", id: "filters", role: "search", onsubmit: (e) => { e.preventDefault(); apply(); } },
    el("div", { class: "search-box" }, search, el("button", { type: "submit" }, "Search")), ...Object.values(selects));
  const keep = { ...filter };
  const body = el("div", { class: "list-column" },
    el("p", { class: "muted small", id: "list-count" }, data.total
      ? `${plural(data.total, "memory", "memories")}${filter.q ? ` matching “${filter.q}”` : ""}` : ""),
    itemList(data.items, "memory-list", (m) => link("memory", m.memory_id, keep), selected),
    pager(data.total, offset, data.items.length, (start) => go("memories", null, { ...filter, offset: start })));
  return { data, filters, body };
}

function itemList(items, id, href, selected) {
  if (!items.length) return el("p", { class: "muted", id }, "No memories here.");
  return el("ul", { class: "items", id }, items.map((m) => el("li", {
    class: `item k-${m.kind}${m.memory_id === selected ? " selected" : ""}${m.status !== "active" ? " inactive" : ""}`,
    "data-memory": m.memory_id },
    el("div", { class: "item-head" }, kindBadge(m.kind), m.status !== "active" ? statusBadge(m.status) : null,
      m.scope === "global" ? statusBadge("global") : null, m.maturity !== "candidate" ? statusBadge(m.maturity) : null,
      el("span", { class: "item-when muted", title: when(m.created) }, ago(m.created))),
    el("a", { class: "item-text text", href: href(m) }, short(m.text, 280)),
    el("div", { class: "item-meta" }, meter(m.truth_decayed, "truth", "truth"), meter(m.utility, "utility", "utility"),
      m.changes ? el("span", { class: "pill s-changed", title: "changes affect it" }, `Δ ${plural(m.changes, "change")}`) : null))));
}

function pager(total, offset, shown, move) {
  if (total <= PAGE && offset === 0) return el("div", { class: "pager", id: "pager" },
    el("span", { id: "page-info", class: "muted small" }, total ? `${offset + 1}–${offset + shown} of ${total}` : ""));
  return el("div", { class: "pager", id: "pager" },
    el("button", { type: "button", id: "prev", disabled: offset <= 0, onclick: () => move(Math.max(0, offset - PAGE)) }, "← Previous"),
    el("span", { id: "page-info", class: "muted small" }, total ? `${offset + 1}–${offset + shown} of ${total}` : "0 of 0"),
    el("button", { type: "button", id: "next", disabled: offset + shown >= total, onclick: () => move(offset + PAGE) }, "Next →"));
}

async function memory(ctx) {
  if (!WIDE.matches) {
    const back = el("a", { href: link("memories", null, listParams(ctx.params)), class: "back" }, "← All memories");
    return el("div", { class: "stack" }, back, await memoryDetail(ctx));
  }
  const [list, detail] = await Promise.all([memoryList(ctx, ctx.id), memoryDetail(ctx)]);
  return el("div", { class: "stack" }, list.filters,
    el("div", { class: "split" }, list.body, el("div", { class: "pane", id: "detail-pane" }, detail)));
}

// --- one memory -----------------------------------------------------------------------------------

// --- actions on a memory: each asks in a dialog of the page, then calls the server -----------------

function forgetAction(repo, m) {
  return () => act(async () => {
    const reason = await ask({ question: "Forget this memory? It stays in the log but is never recalled again.",
                               text: m.text, field: "Reason (kept in the log)", ok: "Forget" });
    if (reason === null) return false;
    await call("forget", { repo_id: repo, memory_id: m.memory_id, reason });
    return "Forgotten.";
  });
}

function editAction(repo, m) {
  return () => act(async () => {
    const change = await askText({ question: "Edit this memory's text. The old text stays in its history.",
                                   value: m.text, ok: "Save" });
    if (change === null) return false;
    const done = await call("edit", { repo_id: repo, memory_id: m.memory_id, text: change.text, rationale: change.reason });
    return done.edited ? "Edited: the old text is in its history." : "The text is unchanged: nothing was recorded.";
  });
}

function lowerAction(repo, m, why) {
  return () => act(async () => {
    const evidence = await ask({ question: "Lower this memory's truth? Say what shows it is wrong.", text: m.text,
                                 field: "Evidence (a file, test, command or output)", ok: "Lower truth" });
    if (evidence === null) return false;
    const truth = { target: 0.1, confidence: 0.9, rationale: why, evidence_refs: evidence.trim() ? [evidence.trim()] : [] };
    const done = await call("update", { repo_id: repo, memory_id: m.memory_id, mode: "commit", updates: { truth } });
    return `Truth lowered from ${num(done.truth.before)} to ${num(done.truth.after)}.`;
  });
}

const writable = (m, readOnly) => !readOnly && may("write") && mayTouch(m);

/** Two memories that say the same thing but for one value, side by side, each with its truth, its dates and
 * what a person may do about it. */
function contradictionPair(pair, repo, readOnly) {
  const [a, b] = pair.memories;
  return el("div", { class: "pair", "data-pair": `${a.memory_id} ${b.memory_id}` },
    el("p", { class: "muted small" }, `Nearly the same text (similarity ${num(pair.similarity)}) but “${pair.values[0]}” ` +
      `against “${pair.values[1]}”: at most one of them is true.`),
    el("div", { class: "pair-sides" }, pair.memories.map((m, i) => el("div", { class: `side k-${m.kind}`, "data-memory": m.memory_id },
      el("div", { class: "item-head" }, kindBadge(m.kind), el("span", { class: "pill s-value" }, pair.values[i]),
        el("span", { class: "item-when muted", title: when(m.created) }, `written ${day(m.created)}`)),
      el("a", { class: "item-text text", href: memoryHref(m.memory_id) }, m.text),
      el("div", { class: "item-meta" }, meter(m.truth_decayed, "truth", "truth"),
        el("span", { class: "muted small" }, `validated ${day(m.last_validated)}`)),
      el("div", { class: "actions" },
        el("button", { type: "button", class: "lower", disabled: !writable(m, readOnly),
          onclick: lowerAction(repo, m, `contradicted by memory ${pair.memories[1 - i].memory_id}`) }, "Lower truth…"),
        el("button", { type: "button", class: "edit", disabled: !writable(m, readOnly), onclick: editAction(repo, m) }, "Edit…"),
        el("button", { type: "button", class: "danger forget", disabled: !writable(m, readOnly), onclick: forgetAction(repo, m) },
          "Forget…"))))));
}

function contradictionsCard(data, repo, readOnly, id, title) {
  if (!data || !data.pairs.length) return null;
  return el("section", { class: "card", id }, el("h2", {}, title),
    el("div", { class: "stack" }, data.pairs.map((p) => contradictionPair(p, repo, readOnly))));
}

async function memoryDetail({ repo, past, id, readOnly }) {
  const [data, contradicting] = await Promise.all([
    call("memory", { repo_id: repo, memory_id: id, as_of: past }),
    past === undefined ? call("contradictions", { repo_id: repo, memory_id: id }).catch(() => null) : null,
  ]);
  const m = data.memory;
  const summaries = [data.case.problem, ...data.case.solutions, ...data.case.failed_tactics, ...data.change_chain,
                     ...data.change_targets, ...data.related].filter(Boolean);
  const known = new Map(summaries.map((s) => [s.memory_id, s]));
  known.set(m.memory_id, m);
  const forget = el("button", { type: "button", class: "danger", id: "forget",
    disabled: readOnly || m.status === "forgotten" || !may("write") || !mayTouch(m), onclick: forgetAction(repo, m) }, "Forget…");
  const edit = el("button", { type: "button", id: "edit",
    disabled: readOnly || !["active", "pending"].includes(m.status) || !may("write") || !mayTouch(m),
    onclick: editAction(repo, m) }, "Edit…");
  const writer = data.history.find((e) => e.type === "MemoryWritten");
  const author = m.author || (writer && writer.fields.actor);
  return el("article", { id: "memory-page", class: `memory k-${m.kind}`, "data-memory": m.memory_id },
    el("div", { class: "card memory-card" },
      el("div", { class: "badges" }, kindBadge(m.kind), statusBadge(m.status), statusBadge(m.scope), statusBadge(m.maturity),
        el("span", { class: "actions" }, edit, forget)),
      el("p", { class: "memory-text text", id: "memory-text" }, m.text),
      el("p", { class: "byline muted" }, "Written", author ? [" by ", el("strong", {}, author)] : "", ` ${ago(m.created)}`,
        m.repo_id ? [" in ", code(m.repo_id)] : " in another repo", " · ", code(m.memory_id, "small")),
      el("div", { class: "values" },
        meter(m.truth_decayed, "truth", "truth big"), meter(m.utility, "utility", "utility big"),
        el("div", { class: "figures" }, [["belief", num(m.truth)], ["confidence", num(m.confidence)],
          ["validations", m.validations], ["reinforcements", m.reinforcements]].map(([k, v]) =>
          el("span", { class: "figure-pair" }, el("span", { class: "fig-label" }, k), el("span", { class: "fig-value" }, String(v))))))),
    contradictionsCard(contradicting, repo, readOnly, "contradictions", "Contradicts"),
    caseGraph(data.case, m),
    changeGraph(data, m),
    data.related.length ? el("section", { class: "card", id: "related" }, el("h2", {}, "Related"),
      memoryLines(data.related, "related-list", "")) : null,
    el("section", { class: "card" }, el("h2", {}, "History"), history(data.history, (mid) => known.get(mid))),
    details(m, (mid) => known.get(mid)));
}

function caseGraph(c, m) {
  if (!c.problem) return null;
  const members = [...c.solutions.map((s) => ({ memory: s, label: "solves", edge: "solves", to: "hub" })),
                   ...c.failed_tactics.map((f) => ({ memory: f, label: "failed on", edge: "failed", to: "hub" }))];
  return el("section", { class: "card", id: "case" },
    el("h2", {}, "The case"),
    el("p", { class: "muted small" }, `The problem, ${plural(c.solutions.length, "solution")} and ` +
      `${plural(c.failed_tactics.length, "failed tactic")}. Failed tactics are cautions, not bans.`),
    graph({ hub: c.problem, members, focus: m.memory_id, href: memoryHref, id: "case-graph",
            label: `The case of the problem: ${c.problem.text}` }),
    el("ul", { class: "sr-only" }, [c.problem, ...c.solutions, ...c.failed_tactics].map((x) => el("li", {},
      `${kindName(x.kind)}: ${x.text}`))));
}

function changeGraph(data, m) {
  const chain = data.change_chain, targets = data.change_targets;
  if (!chain.length && !targets.length) return null;
  const hub = { ...m, truth_decayed: m.truth_decayed };
  const members = chain.length
    ? chain.map((c) => ({ memory: c, label: "changed it", edge: "change", to: "hub" }))
    : targets.map((t) => ({ memory: t, label: "affects", edge: "change", to: "member" }));
  return el("section", { class: "card", id: chain.length ? "change-chain" : "change-targets" },
    el("h2", {}, chain.length ? "Change chain" : "What this change affects"),
    el("p", { class: "muted small" }, chain.length
      ? `${plural(chain.length, "change")} since it was written, oldest first: each lowered its truth.`
      : `The memories this change made stale (their truth was lowered).`),
    graph({ hub, members, focus: m.memory_id, href: memoryHref, id: chain.length ? "chain-graph" : "targets-graph",
            label: chain.length ? "The changes affecting this memory" : "The memories this change affects" }),
    el("ul", { class: "sr-only" }, (chain.length ? chain : targets).map((x) => el("li", {}, `${kindName(x.kind)}: ${x.text}`))));
}

function history(events, known) {
  let text = null; // the memory's text before each event: an edit's sentence quotes what it replaced
  const before = events.map((e) => {
    const was = text;
    if ((e.type === "MemoryWritten" || e.type === "TextEdited") && e.fields && e.fields.text) text = e.fields.text;
    return was;
  });
  return el("ol", { class: "history", id: "history" }, events.map((e, i) => el("li", { "data-type": e.type, class: `ev ev-${e.type}` },
    el("div", { class: "ev-when" }, el("time", { datetime: e.timestamp, title: when(e.timestamp) }, `${day(e.timestamp)} ${clock(e.timestamp)}`),
      e.position ? el("a", { href: link(route().view, route().id, { as_of: e.position }), class: "as-of-link",
                             title: "the whole page as it stood right after this event" }, `#${e.position} · as of here`) : null),
    sentence(e, { known, href: memoryHref, before: before[i] }),
    el("details", { class: "raw" }, el("summary", {}, `${e.type} (the raw event)`), el("pre", { class: "fields" }, JSON.stringify(e.fields, null, 2))))));
}

function details(m, known) {
  const facts = [
    ["rationale", m.rationale],
    ["evidence", m.evidence_refs.length ? m.evidence_refs.map((r, i) => [i ? ", " : "", code(r)]) : ""],
    ["anchored to", m.anchors.length ? m.anchors.map((a, i) => [i ? ", " : "", code(`${a.path}${a.symbol ? "#" + a.symbol : ""}`)]) : ""],
    ["utility by problem", Object.entries(m.utility_by_problem).map(([k, v], i) => [i ? "; " : "", num(v), " for ",
      known(k) ? el("a", { href: memoryHref(k) }, short(known(k).text, 80)) : code(k === "(none)" ? "no problem named" : k)])],
    ["merged copies", m.merged.length ? plural(m.merged.length, "near-duplicate") : ""],
    ["last validated", when(m.last_validated)], ["created", when(m.created)], ["version", String(m.version)],
  ].filter(([, v]) => v !== "" && v !== null && !(Array.isArray(v) && !v.length));
  return el("section", { class: "card", id: "facts" }, el("h2", {}, "Details"),
    el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
}

// --- timeline -----------------------------------------------------------------------------------

function activityList(events, ctx, id) {
  if (!events.length) return el("p", { class: "muted", id }, "No events.");
  const full = { href: memoryHref, ...ctx, known: ctx.known || (() => null) };
  let lastDay = null;
  const items = [];
  for (const e of events) {
    const d = day(e.timestamp);
    if (d !== lastDay && id !== "recent") items.push(el("li", { class: "day-head" }, d));
    lastDay = d;
    items.push(el("li", { "data-type": e.type, class: `ev ev-${e.type}`, "data-memory": e.memory_id },
      el("div", { class: "ev-when" }, el("time", { datetime: e.timestamp, title: when(e.timestamp) },
        id === "recent" ? ago(e.timestamp) : clock(e.timestamp)), e.position ? el("span", { class: "muted" }, ` #${e.position}`) : null),
      el("div", { class: "ev-body" },
        el("div", { class: "ev-memory" }, kindBadge(e.kind), " ", el("a", { href: memoryHref(e.memory_id), class: "text" }, short(e.text, 160))),
        sentence(e, full))));
  }
  return el("ol", { class: "history timeline", id }, items);
}

async function timeline({ repo, past, params }) {
  const before = params.get("before") ? Number(params.get("before")) : undefined;
  const data = await call("timeline", { repo_id: repo, before, limit: PAGE, as_of: past });
  return el("div", { class: "stack narrow" },
    el("div", { class: "page-head" }, el("h1", {}, "Timeline"),
      el("p", { class: "muted" }, "Every event on the memories this repo sees, newest first.")),
    el("section", { class: "card" }, activityList(data.events, {}, "timeline-list")),
    el("div", { class: "pager" },
      el("button", { type: "button", id: "newer", disabled: !before, onclick: () => go("timeline", null, { before: null }) }, "Newest"),
      el("button", { type: "button", id: "older", disabled: !data.next_before,
        onclick: () => go("timeline", null, { before: data.next_before }) }, "Older →")));
}

// --- sessions -----------------------------------------------------------------------------------

function sessionMemories(memories) {
  if (!memories.length) return el("span", { class: "muted" }, " nothing it still sees");
  return el("ul", { class: "lines" }, memories.map((m) => el("li", { "data-memory": m.memory_id },
    kindBadge(m.kind), " ", el("a", { href: memoryHref(m.memory_id) }, short(m.text, 160)),
    m.status !== "active" ? [" ", statusBadge(m.status)] : null)));
}

function sessionReads(reads, title, cls) {
  if (!reads.length) return null;
  return el("section", { class: `session-part ${cls}` }, el("h3", {}, `${title} (${reads.length})`),
    el("ol", { class: "history" }, reads.map((r) => el("li", { class: "ev", "data-read": r.read_id },
      el("div", { class: "ev-when" }, el("time", { datetime: r.at, title: when(r.at) }, clock(r.at)),
        el("span", { class: "muted" }, ` ${r.mode.replace("hook:", "hook at ")}`)),
      el("p", {}, r.query ? el("q", {}, r.query) : el("span", { class: "muted" }, "no query"),
        el("span", { class: "muted" }, ` · ${plural(r.memories.length, "memory", "memories")}`)),
      sessionMemories(r.memories)))));
}

function sessionActs(acts, title, cls) {
  if (!acts.length) return null;
  const what = (a) => {
    if (a.type === "UtilityObserved") return `rated ${num(a.target)}`;
    if (cls === "rated") return `judged the truth ${num(a.target)} of`;
    if (a.type === "DuplicateMerged") return "wrote a near-duplicate of";
    return a.type === "TruthAdjusted" ? "wrote again" : "wrote";
  };
  return el("section", { class: `session-part ${cls}` }, el("h3", {}, `${title} (${acts.length})`),
    el("ul", { class: "lines" }, acts.map((a) => el("li", { "data-memory": a.memory_id, "data-type": a.type },
      el("time", { datetime: a.at, title: when(a.at), class: "muted" }, clock(a.at)), " ", what(a), " ",
      kindBadge(a.kind), " ", el("a", { href: memoryHref(a.memory_id) }, short(a.text, 160)),
      a.rationale ? [" — ", el("q", {}, short(a.rationale, 160))] : null))));
}

async function sessions({ repo, past }) {
  const head = el("div", { class: "page-head" }, el("h1", {}, "Sessions"),
    el("p", { class: "muted" }, "What each session was shown, read, wrote and rated, newest first. A session is a run of " +
      "the repo's activity without a pause of 30 minutes; a rating joins the session of the read it cites. Reads are " +
      "this server's own."));
  if (past !== undefined) return el("div", { class: "stack narrow" }, head,
    el("p", { class: "muted", id: "sessions-now" }, "Sessions are shown as they are now: switch As of to Now."));
  const data = await call("sessions", { repo_id: repo, gap_minutes: 30, limit: 20 });
  if (!data.sessions.length) return el("div", { class: "stack narrow" }, head,
    el("section", { class: "card empty-card" }, el("p", { id: "sessions-empty" }, "No session has read or written here yet.")));
  return el("div", { class: "stack narrow" }, head, el("div", { id: "session-list", class: "stack" },
    data.sessions.map((x) => el("section", { class: "card session", "data-started": x.started },
      el("h2", {}, el("time", { datetime: x.started, title: when(x.started) }, `${day(x.started)} ${clock(x.started)}`),
        x.ended !== x.started ? ["–", el("time", { datetime: x.ended, title: when(x.ended) }, clock(x.ended))] : null,
        x.actors.length ? el("span", { class: "muted small" }, ` · ${x.actors.join(", ")}`) : null),
      el("p", { class: "muted small session-counts" }, [`${x.shown.length} shown`, `${x.read.length} read`,
        `${x.wrote.length} written`, `${x.rated.length} rated`].join(" · ")),
      sessionReads(x.shown, "Shown by hooks", "shown"), sessionReads(x.read, "Read", "read"),
      sessionActs(x.wrote, "Wrote", "wrote"), sessionActs(x.rated, "Rated", "rated")))));
}

// --- review -------------------------------------------------------------------------------------

async function review({ repo, past, params, readOnly }) {
  const offset = Number(params.get("offset") || 0);
  const data = await call("review_queue", { repo_id: repo, offset, limit: PAGE, as_of: past });
  const head = el("div", { class: "page-head" }, el("h1", {}, "Review"),
    el("p", { class: "muted" }, "Proposals wait here when agent writes need a person's review (review_writes): an approved " +
      "memory is recalled from then on, a rejected one never is."));
  if (!data.items.length) return el("div", { class: "stack narrow" }, head,
    el("section", { class: "card empty-card" }, el("p", { id: "review-empty" }, "Nothing waits for review.")));
  const reviewer = may("review");
  const decide = (m, decision) => act(async () => {
    let note = "";
    if (decision === "approved") {
      if (await ask({ question: "Approve this memory? It will be recalled from now on.", text: m.text, ok: "Approve" }) === null) return false;
    } else {
      note = await ask({ question: "Reject this memory? It will never be recalled, and the same proposal is refused.",
                         text: m.text, field: "Why (shown when it is proposed again)", ok: "Reject" });
      if (note === null) return false;
    }
    const done = await call("review", { repo_id: repo, memory_id: m.memory_id, decision, note, reviewer: "inspector" });
    return `${done.status === "active" ? "Approved" : "Rejected"}: ${short(m.text, 80)}`;
  });
  const blocked = (m) => (mayTouch(m) ? null : "this token may not review global memories");
  return el("div", { class: "stack narrow" }, head,
    el("ul", { class: "items review-items", id: "review-list" }, data.items.map((m) => el("li", { class: `item k-${m.kind}`, "data-memory": m.memory_id },
      el("div", { class: "item-head" }, kindBadge(m.kind), m.scope === "global" ? statusBadge("global") : null,
        el("span", { class: "item-when muted", title: when(m.created) }, `proposed ${ago(m.created)}`)),
      el("a", { class: "item-text text", href: memoryHref(m.memory_id) }, m.text),
      reviewer ? el("div", { class: "actions" },
        el("button", { type: "button", class: "primary approve", disabled: readOnly || !mayTouch(m), title: blocked(m),
          onclick: () => decide(m, "approved") }, "Approve"),
        el("button", { type: "button", class: "danger reject", disabled: readOnly || !mayTouch(m), title: blocked(m),
          onclick: () => decide(m, "rejected") }, "Reject…")) : null))),
    reviewer ? null : el("p", { class: "muted", id: "review-not-allowed" }, "This token may not review: the queue is shown read-only."),
    pager(data.total, offset, data.items.length, (start) => go("review", null, { offset: start })));
}

// --- read ---------------------------------------------------------------------------------------

async function read({ repo, past, params }) {
  const query = params.get("q") || "";
  const mode = params.get("mode") || "targeted";
  const input = el("input", { type: "search", id: "read-query", value: query, placeholder: "A problem, in your own words",
                              "aria-label": "A problem, in your own words" });
  const modes = options(el("select", { id: "read-mode", "aria-label": "Mode" }), ["targeted", "ambient", "auto"], mode);
  const form = el("form", { class: "read-box", onsubmit: (e) => { e.preventDefault(); go("read", null, { q: input.value.trim(), mode: modes.value }); } },
    input, modes, el("button", { type: "submit", class: "primary" }, "Read"));
  const head = el("div", { class: "page-head" }, el("h1", {}, "Read as an agent"),
    el("p", { class: "muted" }, "Runs a read as an agent would, and shows why each memory came back."));
  if (!query) return el("div", { class: "stack narrow" }, head, form);
  const data = await call("read", { repo_id: repo, query, mode, as_of: past });
  const suppressed = Object.entries(data.suppressed).map(([k, v]) => `${v} ${k.replace(/_/g, " ")}`).join(", ");
  const result = (r, n, member) => el("li", { class: `item k-${r.kind}${member ? " member" : ""}`, "data-memory": r.memory_id },
    el("div", { class: "item-head" }, el("span", { class: "rank" }, n), kindBadge(r.kind),
      el("span", { class: "pill reason" }, r.retrieval_reason.replace(/_/g, " ")), r.maturity !== "candidate" ? statusBadge(r.maturity) : null),
    el("a", { class: "item-text text", href: memoryHref(r.memory_id) }, r.text),
    r.note ? el("p", { class: "caution" }, r.note) : null,
    r.change_chain.map((c) => el("p", { class: "changed" }, "Changed since: ", el("q", {}, c.text))),
    el("div", { class: "item-meta" }, meter(r.relevance, "relevance", "relevance"), meter(r.truth, "truth", "truth"),
      meter(r.utility, "utility", "utility")));
  return el("div", { class: "stack narrow" }, head, form, el("p", { class: "guidance" }, data.guidance),
    data.results.length ? el("ol", { class: "items results", id: "read-results" }, data.results.map((r, i) => [
      result(r, `${i + 1}`, false),
      [...(r.solutions || []), ...(r.failed_tactics || [])].map((m, j) => result(m, `${i + 1}.${j + 1}`, true))]))
      : el("p", { class: "muted", id: "read-results" }, "No memory is relevant enough (an empty answer is a fine answer)."),
    el("p", { class: "muted small" }, `Held back: ${suppressed || "nothing"}. Log position ${data.position}.`));
}

/** The page's own confirmation: a modal dialog with the question, the memory's text and, when `field` names
 * what to type, a text field. Resolves to the text typed ("" without a field), or null when cancelled. */
function ask({ question, text, field, ok }) {
  return new Promise((resolve) => {
    const answer = field ? el("input", { type: "text", id: "ask-answer", "aria-label": field, placeholder: field }) : null;
    const box = el("dialog", { id: "ask", class: "ask", "aria-label": question },
      el("form", { method: "dialog" },
        el("p", { class: "ask-question" }, question),
        text ? el("blockquote", { class: "ask-text text" }, short(text, 300)) : null,
        answer ? el("label", { class: "ask-field" }, field, answer) : null,
        el("div", { class: "ask-buttons" },
          el("button", { type: "submit", value: "cancel", id: "ask-cancel" }, "Cancel"),
          el("button", { type: "submit", value: "ok", id: "ask-ok", class: "danger" }, ok))));
    box.addEventListener("close", () => {
      box.remove();
      resolve(box.returnValue === "ok" ? (answer ? answer.value : "") : null);
    });
    document.body.append(box);
    box.showModal();
    (answer || box.querySelector("#ask-cancel")).focus();
  });
}

/** The page's own editor: a modal dialog with the text in a text area and a field for why. Resolves to
 * {text, reason}, or null when cancelled. */
function askText({ question, value, ok }) {
  return new Promise((resolve) => {
    const area = el("textarea", { id: "edit-text", "aria-label": "Text", rows: 6, maxlength: 4000, required: true });
    area.value = value;
    const reason = el("input", { type: "text", id: "edit-reason", "aria-label": "Why (kept in the log)",
                                 placeholder: "Why (kept in the log)" });
    const box = el("dialog", { id: "ask", class: "ask ask-edit", "aria-label": question },
      el("form", { method: "dialog" },
        el("p", { class: "ask-question" }, question),
        el("label", { class: "ask-field" }, "Text", area),
        el("label", { class: "ask-field" }, "Why (kept in the log)", reason),
        el("div", { class: "ask-buttons" },
          el("button", { type: "submit", value: "cancel", id: "ask-cancel", formnovalidate: true }, "Cancel"),
          el("button", { type: "submit", value: "ok", id: "ask-ok", class: "primary" }, ok))));
    box.addEventListener("close", () => {
      box.remove();
      resolve(box.returnValue === "ok" ? { text: area.value, reason: reason.value } : null);
    });
    document.body.append(box);
    box.showModal();
    area.focus();
  });
}

async function act(action) {
  try {
    const done = await action();
    if (done === false) return;
    reposSeen.clear(); // counts moved
    await render();
    seenHead = null; // drawn after our own change: the next poll takes the head as it is, without drawing again
    message("");
    if (typeof done === "string") notice(done);
  } catch (error) {
    message(error.message);
  }
}

// --- watching the server: the lag banner, and live refresh of the open view ---------------------------
// One poll of /healthz: while the projections catch up a banner says how far behind they are; when the log's
// head moved, the open view is drawn again in place (no page reload), unless it shows a past moment, is the
// read box (every read is recorded), or a person is typing or answering a dialog. A hidden tab polls not at all.

const POLL_MS = { behind: 1000, current: 2000 };

function duration(seconds) {
  return seconds < 90 ? `${Math.max(1, Math.round(seconds))} s` : `${Math.round(seconds / 60)} min`;
}

let seenHead = null; // the head the open view was last drawn at (with the keyword index caught up)
let polling = null;

function refreshable() {
  const { view, params } = route();
  const typing = document.activeElement && document.activeElement.matches("input, textarea, select");
  return !params.get("as_of") && view !== "read" && !document.querySelector("dialog[open]") && !typing
    && $("main").dataset.view !== undefined;
}

async function refresh() {
  reposSeen.clear(); // the counts moved
  const keep = [$("message").textContent, $("notice").textContent];
  await render();
  if (keep[0] && $("message").hidden) message(keep[0]);
  if (keep[1] && $("notice").hidden) notice(keep[1]);
  $("live").textContent = `updated ${clock(new Date().toISOString())}`;
  $("live").dataset.refreshes = String(Number($("live").dataset.refreshes || 0) + 1);
}

async function watch() {
  polling = null;
  if (document.hidden) { document.documentElement.dataset.live = "paused"; return; }
  document.documentElement.dataset.live = "on";
  let behind = null;
  try {
    const report = await (await fetch("/healthz", { cache: "no-store" })).json();
    behind = report.status === "catching_up" ? report.behind : null;
    const settled = ["fts", "links"].every((name) => !report.projections[name] || report.projections[name].lag === 0);
    if (seenHead === null) seenHead = report.head;
    else if (report.head !== seenHead && refreshable()) {
      await refresh();
      if (settled) seenHead = report.head; // else drawn again at the next poll, once the index holds it
    }
  } catch {
    behind = null; // the server is away: the next call's error says so
  }
  const banner = $("catching-up");
  banner.hidden = !behind;
  if (behind) {
    const left = behind.seconds == null ? "" : `, about ${duration(behind.seconds)} left`;
    banner.textContent = `Catching up: the ${behind.projection} are ${behind.events.toLocaleString("en")} events behind${left}. `
      + "Until then reads find the newest memories by their words only.";
  }
  if (!document.hidden) polling = setTimeout(watch, behind ? POLL_MS.behind : POLL_MS.current);
  else document.documentElement.dataset.live = "paused";
}

document.addEventListener("visibilitychange", () => {
  if (document.hidden) {
    clearTimeout(polling);
    polling = null;
    document.documentElement.dataset.live = "paused";
  } else if (polling === null) watch();
});

// --- wiring -------------------------------------------------------------------------------------

function start() {
  $("repo").addEventListener("change", (e) => go(route().view === "memory" ? "memories" : route().view, null, { repo: e.target.value }));
  $("as-of-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const { view, id } = route();
    go(view, id, { as_of: $("as-of").value.trim(), offset: null, before: null });
  });
  $("as-of-now").addEventListener("click", () => { const { view, id } = route(); go(view, id, { as_of: null, before: null }); });
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    forgetToken();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    $("token-form").hidden = true;
    render();
  });
  window.addEventListener("hashchange", render);
  WIDE.addEventListener("change", () => { if (["memories", "memory"].includes(route().view)) render(); });
  render();
  watch();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
