// A memory's events as sentences a person reads: "Written by claude-code as a solution of <problem>,
// confidence 0.85", "Truth lowered from 0.80 to 0.35 by ci-bot: <rationale>". The figures before and
// after come from the server (how the event moved the stored values); the words are made here.

import { code, el, kindName, move, num, short } from "./dom.js";

const by = (actor) => (actor ? [" by ", el("strong", {}, actor)] : []);
const verb = (m, up, down) => (m && m.after > m.before ? up : down);

function evidence(refs) {
  if (!refs || !refs.length) return null;
  return el("span", { class: "evidence" }, " (evidence: ", refs.map((r, i) => [i ? ", " : "", code(r)]), ")");
}

function quote(text) {
  return text ? [": ", el("q", {}, text)] : [];
}

/** A link to a memory, by its text where the page knows it, else by what it is. */
function memoryLink(id, ctx, fallback) {
  if (!id) return fallback;
  const known = ctx.known(id);
  return el("a", { href: ctx.href(id), class: "ref" }, known ? short(known.text, 90) : fallback);
}

const HELPED = (target) => (target >= 0.75 ? "solved it" : target >= 0.4 ? "helped partly" : "misled");

function written(f, e, ctx) {
  const who = f.author || f.actor;
  const as = {
    problem: ["as a problem"],
    solution: ["as a solution of ", memoryLink(f.problem_id, ctx, "a problem")],
    failed_tactic: ["as a failed tactic on ", memoryLink(f.problem_id, ctx, "a problem")],
    change: [`as a change affecting ${(f.change_targets || []).length || "no"} memor${(f.change_targets || []).length === 1 ? "y" : "ies"}`],
  }[f.kind] || [`as a ${kindName(f.kind)}`];
  return ["Written", ...by(who), " ", ...as, f.scope === "global" ? " (global)" : "",
    typeof f.confidence === "number" ? `, confidence ${num(f.confidence)}` : "", ".",
    f.status === "pending" ? " It waited for review." : "",
    f.redactions ? ` ${f.redactions} secret${f.redactions === 1 ? " was" : "s were"} redacted first.` : "",
    f.rationale ? [" Why: ", el("q", {}, f.rationale)] : null, evidence(f.evidence_refs)];
}

function truthAdjusted(f, e, ctx) {
  const m = e.truth;
  if (f.source === "reinforcement") return ["Written again", ...by(f.actor), ": reinforced", m ? `, truth ${verb(m, "raised", "lowered")} from ${num(m.before)} to ${num(m.after)}` : "", ".", evidence(f.evidence_refs)];
  if (f.source === "change") {
    const change = (f.rationale || "").replace(/^changed by memory /, "");
    return [m ? `Truth ${verb(m, "raised", "lowered")} from ${num(m.before)} to ${num(m.after)}` : "Truth adjusted",
      " by the change ", memoryLink(change || null, ctx, "a change"), "."];
  }
  const what = m ? `Truth ${verb(m, "raised", "lowered")} from ${num(m.before)} to ${num(m.after)}` : `Truth judged ${num(f.target)}`;
  const why = f.source === "anchor" ? [" because the code it is anchored to moved on", ...quote(f.rationale)] : [...by(f.actor), ...quote(f.rationale)];
  return [what, ...why, evidence(f.evidence_refs)];
}

function utilityObserved(f, e, ctx) {
  const m = e.utility;
  const problem = f.problem_id ? [" for ", memoryLink(f.problem_id, ctx, "a problem")] : [];
  const rated = typeof f.target === "number" ? `Rated ${num(f.target)} (${HELPED(f.target)})` : "Rated";
  return [rated, ...problem, ...by(f.actor), m ? `: utility ${verb(m, "rose", "fell")} from ${num(m.before)} to ${num(m.after)}` : "",
    ...(f.rationale ? [" — ", el("q", {}, f.rationale)] : []), f.read_id ? [", citing read ", code(short(f.read_id, 12))] : "",
    evidence(f.evidence_refs)];
}

const SENTENCES = {
  MemoryWritten: written,
  TruthAdjusted: truthAdjusted,
  UtilityObserved: utilityObserved,
  ChangeRecorded: (f, e, ctx) => ["Changed by ", memoryLink(f.change_memory_id, ctx, "a change"),
    f.summary && !ctx.known(f.change_memory_id) ? [": ", el("q", {}, short(f.summary, 200))] : "", "."],
  LinksAdded: (f, e, ctx) => ["A repeated write linked it to ", [
    ...(f.problem_ids || []).map((id) => ["the problem ", memoryLink(id, ctx, "a problem")]),
    ...(f.related_ids || []).map((id) => ["the related ", memoryLink(id, ctx, "memory")]),
    ...(f.change_targets || []).map((id) => ["the target ", memoryLink(id, ctx, "memory")])].map((p, i) => [i ? ", " : "", p]), "."],
  MemoryForgotten: (f) => ["Forgotten", ...by(f.actor), ...quote(f.reason), ". It is never recalled again."],
  MemoryReviewed: (f) => [f.decision === "approved" ? "Approved" : "Rejected", ...by(f.reviewer || f.actor), ...quote(f.note), "."],
  AnchorsRecorded: (f) => ["Anchored to ", (f.anchors || []).map((a, i) => [i ? ", " : "",
    code(`${a.path}${a.symbol ? "#" + a.symbol : ""}${a.lines ? `:${a.lines[0]}-${a.lines[1]}` : ""}`)]),
    (f.anchors || [])[0] && f.anchors[0].commit ? [" at commit ", code(short(f.anchors[0].commit, 10))] : "", "."],
  DuplicateMerged: (f, e) => [`A near-duplicate (similarity ${num(f.similarity)}) was written`, ...by(f.author || f.actor),
    " and reinforced it", e.truth ? `: truth ${num(e.truth.before)} → ${num(e.truth.after)}` : "",
    f.text ? [". It said ", el("q", {}, short(f.text, 200))] : "", "."],
  DuplicateUnmerged: (f) => ["A merged near-duplicate was given back its own memory", ...quote(f.reason), "."],
  MemoryArchived: (f, e, ctx) => ["Archived", ...quote(f.reason),
    f.merged_into ? [", merged into ", memoryLink(f.merged_into, ctx, "another memory")] : "", ". Not recalled, restorable."],
  MemoryRestored: (f) => ["Restored", ...quote(f.reason), "."],
  TextEdited: (f, e, ctx) => ["Text edited", ...by(f.actor), ...quote(f.rationale), ".",
    ctx.before ? [" It said ", el("q", { class: "was" }, short(ctx.before, 300)), ";"] : "",
    " it now says ", el("q", { class: "now" }, short(f.text || "", 300)), ".",
    f.redactions ? ` ${f.redactions} secret${f.redactions === 1 ? " was" : "s were"} redacted first.` : ""],
  Learned: (f) => ["Learned from ", f.source === "git" ? `commit ${String(f.ref).slice(0, 12)}` : `${f.source} ${f.ref}`,
    `, which happened on ${String(f.occurred_at).slice(0, 10)}: its truth decays from then.`],
};

/** The event as a sentence, with its moves of truth and utility as before → after chips. */
export function sentence(e, ctx) {
  const make = SENTENCES[e.type];
  const f = e.fields || {};
  const words = make ? make(f, e, ctx) : [e.type.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase(), "."];
  const moves = [move("truth", e.truth), move("utility", e.utility)].filter(Boolean);
  return el("div", { class: "sentence" },
    el("p", {}, words),
    e.withheld ? el("p", { class: "withheld" }, `Recorded from another repo: ${e.withheld.replace(/^recorded from another repo: /, "")}.`) : null,
    moves.length ? el("p", { class: "moves" }, moves) : null);
}
