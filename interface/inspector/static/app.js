// The Strata inspector: a page over the HTTP JSON operations of `strata serve` (POST /v1/<op>).
// No build step, no dependencies. Memories are written by agents: every text is put into the page as
// text nodes (never as HTML). The bearer token, when the server has one, is kept in sessionStorage
// (this tab only) and sent as an Authorization header; never in a URL or a cookie. What the token may
// do (whoami) decides which actions the page offers; the server checks every call all the same.
"use strict";

(() => {
  const TOKEN_KEY = "strata.token";
  const KINDS = ["problem", "solution", "failed_tactic", "fact", "preference", "change"];
  const STATUSES = ["active", "pending", "rejected", "forgotten"];
  const MATURITIES = ["candidate", "established", "proven"];
  const ORDERS = ["newest", "oldest", "truth", "utility"];
  const PAGE = 50;
  const $ = (id) => document.getElementById(id);

  // --- building the page out of text nodes ---------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const badge = (text, extra) => el("span", { class: `badge ${extra || text}` }, text);
  const num = (value) => (typeof value === "number" ? value.toFixed(2) : "");
  const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");
  const short = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

  function options(select, values, current, blank) {
    select.replaceChildren(...(blank ? [el("option", { value: "" }, blank)] : []),
      ...values.map((v) => el("option", { value: v, selected: v === current }, v)));
    return select;
  }

  // --- the API -------------------------------------------------------------------------------

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
    return me;
  }

  const may = (permission) => !!me && (me.operations.includes("operator") || me.operations.includes(permission));
  const mayTouch = (m) => m.scope !== "global" || (!!me && me.global_memories);

  function forgetToken() {
    sessionStorage.removeItem(TOKEN_KEY);
    me = null;
    reposSeen.clear();
  }

  // --- where we are: #/<view>[/<id>]?repo=..&as_of=..&<view's own> ----------------------------

  function route() {
    const [path, query] = (location.hash.replace(/^#/, "") || "/").split("?");
    const parts = path.split("/").filter(Boolean);
    return { view: parts[0] || "memories", id: parts[1] ? decodeURIComponent(parts[1]) : null,
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

  // --- views ---------------------------------------------------------------------------------

  async function render() {
    const { view, id, params } = route();
    const repo = params.get("repo") || "";
    const past = asOf(params);
    document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === view));
    $("as-of").value = params.get("as_of") || "";
    $("past").hidden = past === undefined;
    message("");
    notice("");
    const main = $("main");
    try {
      await whoami();
      const repos = await loadRepos(repo, past);
      if (!repo) {
        if (repos.length) go(view, id, { repo: repos[0].repo_id });
        else main.replaceChildren(el("p", { class: "muted" }, "Nothing is remembered yet."));
        return;
      }
      const ctx = { repo, past, params, id, readOnly: past !== undefined };
      const views = { memories, memory, timeline, review, read };
      const content = await (views[view] || memories)(ctx);
      main.replaceChildren(content);
    } catch (error) {
      message(error.message);
      main.replaceChildren();
    }
  }

  function showPast(point) {
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
    showPast(data.as_of);
    return data.repos;
  }

  async function memories({ repo, past, params }) {
    const filter = { q: params.get("q") || "", kind: params.get("kind") || "", status: params.get("status") || "",
                     maturity: params.get("maturity") || "", order: params.get("order") || "" };
    const offset = Number(params.get("offset") || 0);
    const data = await call("memories", {
      repo_id: repo, query: filter.q || undefined, kinds: filter.kind ? [filter.kind] : [],
      statuses: filter.status ? [filter.status] : [], maturities: filter.maturity ? [filter.maturity] : [],
      order: filter.order || undefined, offset, limit: PAGE, as_of: past,
    });
    const search = el("input", { type: "search", id: "search", name: "q", value: filter.q, placeholder: "search text" });
    const selects = {
      kind: options(el("select", { id: "filter-kind" }), KINDS, filter.kind, "all kinds"),
      status: options(el("select", { id: "filter-status" }), STATUSES, filter.status, "all statuses"),
      maturity: options(el("select", { id: "filter-maturity" }), MATURITIES, filter.maturity, "all maturities"),
      order: options(el("select", { id: "filter-order" }), ORDERS, filter.order, filter.q ? "best match" : "order"),
    };
    const apply = () => go("memories", null, { q: search.value.trim(), kind: selects.kind.value,
      status: selects.status.value, maturity: selects.maturity.value, order: selects.order.value, offset: 0 });
    Object.values(selects).forEach((s) => s.addEventListener("change", apply));
    const form = el("form", { class: "filters", id: "filters", onsubmit: (e) => { e.preventDefault(); apply(); } },
      search, el("button", { type: "submit" }, "Search"), ...Object.values(selects));
    return el("div", {}, form, summaryTable(data.items, "memory-list"), pager(data.total, offset, data.items.length,
      (start) => go("memories", null, { ...filter, offset: start })));
  }

  function summaryTable(items, id) {
    if (!items.length) return el("p", { class: "muted", id }, "No memories here.");
    return el("table", { id },
      el("thead", {}, el("tr", {}, ["memory", "kind", "status", "truth", "utility", "maturity", "changes"].map((h) => el("th", {}, h)))),
      el("tbody", {}, items.map((m) => el("tr", { "data-memory": m.memory_id },
        el("td", { class: "text" }, el("a", { href: link("memory", m.memory_id) }, short(m.text, 240)),
          m.scope === "global" ? [" ", badge("global")] : null),
        el("td", {}, m.kind), el("td", {}, badge(m.status)),
        el("td", { class: "num", title: `belief ${num(m.truth)}, decayed since last validated` }, num(m.truth_decayed)),
        el("td", { class: "num" }, num(m.utility)), el("td", {}, badge(m.maturity)),
        el("td", { class: "num" }, m.changes || "")))));
  }

  function pager(total, offset, shown, move) {
    return el("div", { class: "pager" },
      el("button", { type: "button", id: "prev", disabled: offset <= 0, onclick: () => move(Math.max(0, offset - PAGE)) }, "Previous"),
      el("span", { id: "page-info" }, total ? `${offset + 1}–${offset + shown} of ${total}` : "0 of 0"),
      el("button", { type: "button", id: "next", disabled: offset + shown >= total, onclick: () => move(offset + PAGE) }, "Next"));
  }

  async function memory({ repo, past, id, readOnly }) {
    const data = await call("memory", { repo_id: repo, memory_id: id, as_of: past });
    const m = data.memory;
    const facts = [["truth", `${num(m.truth)} (decayed ${num(m.truth_decayed)})`], ["utility", num(m.utility)],
      ["confidence", num(m.confidence)], ["validations", m.validations], ["reinforcements", m.reinforcements],
      ["created", when(m.created)], ["last validated", when(m.last_validated)], ["repo", m.repo_id || "(another repo)"],
      ["author", m.author || ""], ["rationale", m.rationale], ["evidence", m.evidence_refs.join(", ")],
      ["utility by problem", Object.entries(m.utility_by_problem).map(([k, v]) => `${k}: ${num(v)}`).join("; ")]];
    const forget = el("button", { type: "button", class: "danger", id: "forget",
      disabled: readOnly || m.status === "forgotten" || !may("write") || !mayTouch(m),
      onclick: () => act(async () => {
        const reason = prompt("Forget this memory? It stays in the log but is never recalled again.\n" +
                              "Give a reason (kept in the log) and press OK, or Cancel to keep it.", "");
        if (reason === null) return false;
        await call("forget", { repo_id: repo, memory_id: m.memory_id, reason });
        return "Forgotten.";
      }) }, "Forget…");
    return el("div", { id: "memory-page" },
      el("div", { class: "card" },
        el("p", { class: "memory-text", id: "memory-text" }, m.text),
        el("p", {}, badge(m.kind, "kind"), " ", badge(m.scope), " ", badge(m.status), " ", badge(m.maturity)),
        el("dl", { class: "facts" }, facts.filter(([, v]) => v !== "" && v !== null).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
        el("div", { class: "actions" }, forget)),
      caseCard(data.case),
      listCard("Change chain (changes affecting it, oldest first)", data.change_chain, "change-chain"),
      listCard("Changes it records", data.change_targets, "change-targets"),
      listCard("Related", data.related, "related"),
      el("div", { class: "card" }, el("h2", {}, "History"), historyTable(data.history)));
  }

  function memoryLine(m) {
    return el("li", {}, el("a", { href: link("memory", m.memory_id) }, short(m.text, 200)), " ", badge(m.kind, "kind"), " ",
      badge(m.status), el("span", { class: "muted" }, ` truth ${num(m.truth_decayed)}, utility ${num(m.utility)}`));
  }

  function listCard(title, items, id) {
    if (!items.length) return null;
    return el("div", { class: "card", id }, el("h2", {}, title), el("ul", { class: "plain" }, items.map(memoryLine)));
  }

  function caseCard(c) {
    if (!c.problem) return null;
    return el("div", { class: "card", id: "case" }, el("h2", {}, "The case"),
      el("ul", { class: "plain" }, memoryLine(c.problem)),
      el("h2", {}, "Solutions"), c.solutions.length ? el("ul", { class: "plain", id: "solutions" }, c.solutions.map(memoryLine)) : el("p", { class: "muted" }, "none"),
      el("h2", {}, "Failed tactics"), c.failed_tactics.length ? el("ul", { class: "plain", id: "failed-tactics" }, c.failed_tactics.map(memoryLine)) : el("p", { class: "muted" }, "none"));
  }

  function historyTable(events, withMemory) {
    return el("table", { id: withMemory ? "timeline-table" : "history" },
      el("thead", {}, el("tr", {}, ["position", "time", "event", ...(withMemory ? ["memory"] : []), "details", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, events.map((e) => el("tr", { "data-type": e.type },
        el("td", { class: "num" }, e.position ?? ""), el("td", {}, when(e.timestamp)), el("td", {}, e.type),
        withMemory ? el("td", { class: "text" }, el("a", { href: link("memory", e.memory_id) }, short(e.text, 160)), " ", badge(e.kind, "kind")) : null,
        el("td", {}, e.withheld ? el("div", { class: "withheld" }, e.withheld) : null,
          el("div", { class: "fields" }, details(e.fields, withMemory ? ["text"] : []))),
        el("td", {}, e.position ? el("a", { href: link(route().view, route().id, { as_of: e.position }), class: "as-of-link" }, "as of here") : null)))));
  }

  function details(fields, skip) {
    return Object.entries(fields).filter(([k, v]) => !skip.includes(k) && v !== null && v !== "" && !(Array.isArray(v) && !v.length))
      .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join("\n");
  }

  async function timeline({ repo, past, params }) {
    const before = params.get("before") ? Number(params.get("before")) : undefined;
    const data = await call("timeline", { repo_id: repo, before, limit: PAGE, as_of: past });
    return el("div", {},
      data.events.length ? historyTable(data.events, true) : el("p", { class: "muted" }, "No events."),
      el("div", { class: "pager" },
        el("button", { type: "button", id: "newer", disabled: !before, onclick: () => go("timeline", null, { before: null }) }, "Newest"),
        el("button", { type: "button", id: "older", disabled: !data.next_before,
          onclick: () => go("timeline", null, { before: data.next_before }) }, "Older")));
  }

  async function review({ repo, past, params, readOnly }) {
    const offset = Number(params.get("offset") || 0);
    const data = await call("review_queue", { repo_id: repo, offset, limit: PAGE, as_of: past });
    if (!data.items.length) return el("p", { class: "muted", id: "review-empty" }, "Nothing waits for review.");
    const reviewer = may("review");
    const decide = (m, decision) => act(async () => {
      let note = "";
      if (decision === "approved") {
        if (!confirm(`Approve this memory? It will be recalled from now on.\n\n${short(m.text, 300)}`)) return false;
      } else {
        note = prompt(`Reject this memory? It will never be recalled, and the same proposal is refused.\n\n` +
                      `${short(m.text, 300)}\n\nWhy (shown when it is proposed again):`, "");
        if (note === null) return false;
      }
      const done = await call("review", { repo_id: repo, memory_id: m.memory_id, decision, note, reviewer: "inspector" });
      return `${done.status === "active" ? "Approved" : "Rejected"}: ${short(m.text, 80)}`;
    });
    return el("div", {},
      el("table", { id: "review-list" },
        el("thead", {}, el("tr", {}, ["memory", "kind", "scope", "written", ""].map((h) => el("th", {}, h)))),
        el("tbody", {}, data.items.map((m) => el("tr", { "data-memory": m.memory_id },
          el("td", { class: "text" }, el("a", { href: link("memory", m.memory_id) }, m.text)),
          el("td", {}, m.kind), el("td", {}, m.scope), el("td", {}, when(m.created)),
          el("td", {}, reviewer ? el("div", { class: "actions" },
            el("button", { type: "button", class: "primary approve", disabled: readOnly || !mayTouch(m),
              title: mayTouch(m) ? null : "this token may not review global memories", onclick: () => decide(m, "approved") }, "Approve"),
            el("button", { type: "button", class: "danger reject", disabled: readOnly || !mayTouch(m),
              title: mayTouch(m) ? null : "this token may not review global memories", onclick: () => decide(m, "rejected") }, "Reject…"))
            : null))))),
      reviewer ? null : el("p", { class: "muted", id: "review-not-allowed" }, "This token may not review: the queue is shown read-only."),
      pager(data.total, offset, data.items.length, (start) => go("review", null, { offset: start })));
  }

  async function read({ repo, past, params }) {
    const query = params.get("q") || "";
    const mode = params.get("mode") || "targeted";
    const input = el("input", { type: "search", id: "read-query", value: query, placeholder: "a problem, in your own words" });
    const modes = options(el("select", { id: "read-mode" }), ["targeted", "ambient", "auto"], mode);
    const form = el("form", { class: "read-box", onsubmit: (e) => { e.preventDefault(); go("read", null, { q: input.value.trim(), mode: modes.value }); } },
      input, modes, el("button", { type: "submit", class: "primary" }, "Read"));
    if (!query) return el("div", {}, form, el("p", { class: "muted" }, "Runs a read as an agent would, and shows why each memory came back."));
    const data = await call("read", { repo_id: repo, query, mode, as_of: past });
    const suppressed = Object.entries(data.suppressed).map(([k, v]) => `${k} ${v}`).join(", ");
    return el("div", {}, form, el("p", { class: "guidance" }, data.guidance),
      data.results.length ? el("table", { id: "read-results" },
        el("thead", {}, el("tr", {}, ["#", "memory", "why", "relevance", "truth", "utility", "maturity"].map((h) => el("th", {}, h)))),
        el("tbody", {}, data.results.flatMap((r, i) => [[r, `${i + 1}`],
          ...[...(r.solutions || []), ...(r.failed_tactics || [])].map((m, j) => [m, `${i + 1}.${j + 1}`])]).map(([r, n]) =>
          el("tr", { "data-memory": r.memory_id, class: n.includes(".") ? "member" : "" },
          el("td", { class: "num" }, n),
          el("td", { class: "text" }, el("a", { href: link("memory", r.memory_id) }, r.text), " ", badge(r.kind, "kind"),
            r.note ? el("div", { class: "withheld" }, r.note) : null,
            r.change_chain.map((c) => el("div", { class: "fields" }, `changed since: ${c.text}`))),
          el("td", { class: "reason" }, r.retrieval_reason), el("td", { class: "num" }, num(r.relevance)),
          el("td", { class: "num" }, num(r.truth)), el("td", { class: "num" }, num(r.utility)), el("td", {}, badge(r.maturity))))))
        : el("p", { class: "muted", id: "read-results" }, "No memory is relevant enough (an empty answer is a fine answer)."),
      el("p", { class: "muted" }, `Held back: ${suppressed || "nothing"}. Log position ${data.position}.`));
  }

  async function act(action) {
    try {
      const done = await action();
      if (done === false) return;
      await render();
      message("");
      if (typeof done === "string") notice(done);
    } catch (error) {
      message(error.message);
    }
  }

  // --- wiring --------------------------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
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
    render();
  });
})();
