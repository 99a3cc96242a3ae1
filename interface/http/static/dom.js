// Building the page out of DOM nodes: every text an agent wrote goes in as a text node, never as HTML.
// Colours live in app.css (classes k-<kind>, s-<status>); nothing here sets a style attribute, which
// the page's Content-Security-Policy forbids.

export const KINDS = ["problem", "solution", "failed_tactic", "fact", "preference", "change"];
export const STATUSES = ["active", "pending", "rejected", "forgotten", "archived"];
export const MATURITIES = ["candidate", "established", "proven"];
const KIND_NAMES = { problem: "problem", solution: "solution", failed_tactic: "failed tactic", fact: "fact",
                     preference: "preference", change: "change" };
const KIND_MARKS = { problem: "?", solution: "✓", failed_tactic: "✗", fact: "i", preference: "★", change: "Δ" };
const SVG_NS = "http://www.w3.org/2000/svg";

export const $ = (id) => document.getElementById(id);

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element: el("a", {href, class}, "text", child, ...). */
export const el = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);

/** An SVG element, built the same way (attributes, not styles). */
export const svg = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

export const kindName = (kind) => KIND_NAMES[kind] || kind;
export const kindMark = (kind) => KIND_MARKS[kind] || "•";

/** A kind as a coloured chip with its mark and its name (the colour is never the only signal). */
export const kindBadge = (kind) => el("span", { class: `chip k-${kind}`, title: kindName(kind) },
  el("span", { class: "mark", "aria-hidden": "true" }, kindMark(kind)), kindName(kind));

/** A status (or maturity, scope) as an outlined pill with a dot. */
export const statusBadge = (status) => el("span", { class: `pill s-${status}` }, status);

export const num = (value) => (typeof value === "number" ? value.toFixed(2) : "");
export const short = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

const DAY = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short", year: "numeric" });
const TIME = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const SECONDS = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
// one date format on the whole page: a moment is its day as `day` writes it, then its time
export const when = (iso) => (iso ? `${DAY.format(new Date(iso))}, ${SECONDS.format(new Date(iso))}` : "");
export const day = (iso) => (iso ? DAY.format(new Date(iso)) : "");
export const clock = (iso) => (iso ? TIME.format(new Date(iso)) : "");

/** "3 minutes ago", "yesterday", or the date beyond a week. */
export function ago(iso, now = Date.now()) {
  const seconds = (now - new Date(iso).getTime()) / 1000;
  if (seconds < 60) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} minute${minutes === 1 ? "" : "s"} ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} hour${hours === 1 ? "" : "s"} ago`;
  const days = Math.round(hours / 24);
  if (days < 7) return days === 1 ? "yesterday" : `${days} days ago`;
  return day(iso);
}

/** An identifier, a path or a command: the only texts allowed to break anywhere. */
export const code = (text, cls) => el("code", { class: cls ? `id ${cls}` : "id" }, text);

/** A value in [0, 1] as a small bar with its figure (a drawing, so no style attribute is needed). */
export function meter(value, label, extra) {
  const width = Math.max(0, Math.min(1, value || 0)) * 100;
  return el("span", { class: `meter ${extra || ""}`, title: label ? `${label} ${num(value)}` : null },
    label ? el("span", { class: "meter-label" }, label) : null,
    svg("svg", { viewBox: "0 0 100 8", preserveAspectRatio: "none", class: "meter-bar", "aria-hidden": "true" },
      svg("rect", { x: 0, y: 0, width: 100, height: 8, rx: 4, class: "meter-track" }),
      svg("rect", { x: 0, y: 0, width, height: 8, rx: 4, class: "meter-fill" })),
    el("span", { class: "meter-value" }, num(value)));
}

/** Before -> after, with an arrow that says which way it went (and a class that colours it). */
export function move(name, m) {
  if (!m) return null;
  const up = m.after > m.before;
  return el("span", { class: `move ${up ? "up" : "down"}`, title: `${name} ${up ? "raised" : "lowered"}` },
    `${name} ${num(m.before)} `, el("span", { class: "arrow", "aria-hidden": "true" }, up ? "▲" : "▼"),
    ` ${num(m.after)}`);
}

export function options(select, values, current, blank) {
  select.replaceChildren(...(blank ? [el("option", { value: "" }, blank)] : []),
    ...values.map((v) => el("option", { value: v, selected: v === current }, v.replace("_", " "))));
  return select;
}

export const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + "s"}`;
