// Drawings in inline SVG built with DOM calls (no library): the activity bars, a repo's holdings by
// kind, and a memory's neighbourhood (a case, a change chain) as a small graph. Each drawing is sized
// to its container and drawn again when the container's width changes.

import { KINDS, el, kindMark, kindName, num, plural, short, svg } from "./dom.js";

/** Draw `draw(width)` into `box` now and whenever its width changes; returns the box. */
export function sized(box, draw) {
  let drawn = -1;
  const redraw = () => {
    const width = Math.floor(box.clientWidth);
    if (width > 0 && width !== drawn) {
      drawn = width;
      box.replaceChildren(draw(width));
    }
  };
  new ResizeObserver(redraw).observe(box);
  return box;
}

// --- activity: memories written per day, stacked by kind ---------------------------------------

function days(since, until) {
  const out = [];
  for (let d = new Date(`${since}T00:00:00Z`); d <= new Date(`${until}T00:00:00Z`); d.setUTCDate(d.getUTCDate() + 1)) {
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

const SHORT_DAY = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short", timeZone: "UTC" });
const dayLabel = (iso) => SHORT_DAY.format(new Date(`${iso}T00:00:00Z`));

export function activityChart(overview) {
  const perDay = new Map();
  for (const row of overview.activity) {
    const counts = perDay.get(row.day) || {};
    counts[row.kind] = row.written;
    perDay.set(row.day, counts);
  }
  const all = days(overview.since, overview.until);
  const totals = all.map((d) => Object.values(perDay.get(d) || {}).reduce((a, b) => a + b, 0));
  const top = Math.max(1, ...totals);
  const present = KINDS.filter((k) => overview.activity.some((r) => r.kind === k));
  const box = el("div", { class: "chart", id: "activity-chart" });
  sized(box, (width) => {
    // the y-axis label ends 6 px left of the plot: room for its digits (11 px type, under 7 px a digit)
    const height = 150, left = Math.max(30, 12 + 7 * String(top).length), bottom = 22, top_ = 8;
    const plot = height - bottom - top_;
    const step = (width - left) / all.length;
    const bar = Math.max(2, Math.min(28, step * 0.7));
    const y = (v) => top_ + plot - (v / top) * plot;
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": `Memories written per day, ${dayLabel(overview.since)} to ${dayLabel(overview.until)}: ` +
                    `${totals.reduce((a, b) => a + b, 0)} in all` },
      svg("line", { x1: left, x2: width, y1: y(0), y2: y(0), class: "axis" }),
      svg("line", { x1: left, x2: width, y1: y(top), y2: y(top), class: "grid" }),
      svg("text", { x: left - 6, y: y(top) + 4, class: "tick", "text-anchor": "end" }, String(top)),
      svg("text", { x: left - 6, y: y(0) + 4, class: "tick", "text-anchor": "end" }, "0"));
    const every = Math.ceil(all.length / Math.max(1, Math.floor((width - left) / 64)));
    all.forEach((d, i) => {
      const x = left + i * step + (step - bar) / 2;
      const counts = perDay.get(d) || {};
      let base = 0;
      const parts = present.filter((k) => counts[k]).map((k) => {
        const h = (counts[k] / top) * plot;
        const rect = svg("rect", { x, y: y(base) - h, width: bar, height: Math.max(h, 1), class: `fill-${k}` });
        base += counts[k];
        return rect;
      });
      if (!parts.length) parts.push(svg("rect", { x, y: y(0) - 2, width: bar, height: 2, class: "no-day" }));
      const detail = present.filter((k) => counts[k]).map((k) => `${counts[k]} ${kindName(k)}`).join(", ");
      chart.append(svg("g", { class: "day" },
        svg("title", {}, `${dayLabel(d)}: ${plural(totals[i], "memory", "memories")} written${detail ? ` (${detail})` : ""}`),
        svg("rect", { x: left + i * step, y: top_, width: step, height: plot, class: "hit" }), parts));
      if ((all.length - 1 - i) % every === 0) {
        const last = i === all.length - 1;
        chart.append(svg("text", { x: last ? width - 1 : x + bar / 2, y: height - 6, class: "tick",
                                    "text-anchor": last ? "end" : "middle" }, dayLabel(d)));
      }
    });
    return chart;
  });
  return el("figure", { class: "figure" }, box,
    el("figcaption", { class: "legend" }, present.length
      ? present.map((k) => el("span", { class: "key" }, el("span", { class: `swatch fill-${k}`, "aria-hidden": "true" }),
          kindName(k)))
      : "Nothing was written in these days."));
}

// --- holdings: how many of each kind, active and otherwise -------------------------------------

export function holdings(overview) {
  const byKind = {};
  for (const c of overview.counts) {
    const k = (byKind[c.kind] = byKind[c.kind] || { total: 0, statuses: {} });
    k.total += c.count;
    k.statuses[c.status] = (k.statuses[c.status] || 0) + c.count;
  }
  const top = Math.max(1, ...Object.values(byKind).map((k) => k.total));
  return el("ul", { class: "holdings", id: "holdings" }, KINDS.filter((k) => byKind[k]).map((kind) => {
    const { total, statuses } = byKind[kind];
    const active = statuses.active || 0;
    const others = Object.entries(statuses).filter(([s]) => s !== "active").map(([s, n]) => `${n} ${s}`);
    return el("li", { "data-kind": kind },
      el("span", { class: `chip k-${kind}` }, el("span", { class: "mark", "aria-hidden": "true" }, kindMark(kind)), kindName(kind)),
      svg("svg", { viewBox: "0 0 100 10", preserveAspectRatio: "none", class: "hbar", "aria-hidden": "true" },
        svg("rect", { x: 0, y: 0, width: (total / top) * 100, height: 10, rx: 2, class: `fill-${kind} faded` }),
        svg("rect", { x: 0, y: 0, width: (active / top) * 100, height: 10, rx: 2, class: `fill-${kind}` })),
      el("span", { class: "count" }, String(total)),
      others.length ? el("span", { class: "others muted" }, others.join(" · ")) : null);
  }));
}

// --- a memory's neighbourhood as a graph: one hub, its members, labelled edges -------------------

const LINE = 17, PAD = 10, HEAD = 18, GAP = 12, SPINE = 12;

function wrap(text, chars, lines) {
  const words = text.split(/\s+/).filter(Boolean);
  const out = [""];
  for (const word of words) {
    const last = out[out.length - 1];
    if (!last) out[out.length - 1] = word;
    else if ((last + " " + word).length <= chars) out[out.length - 1] = last + " " + word;
    else out.push(word);
  }
  if (out.length > lines) {
    out.length = lines;
    out[lines - 1] = short(out[lines - 1] + " …", chars);
  }
  return out.map((line) => short(line, chars));
}

/** A memory's box: its kind, relation, status and truth on top, its text below (three lines at most). */
function card(m, w, { relation, focus, href }) {
  const lines = wrap(m.text, Math.max(12, Math.floor((w - 2 * PAD) / 7.1)), 3);
  const h = HEAD + lines.length * LINE + PAD;
  const faded = ["forgotten", "rejected", "archived"].includes(m.status);
  const head = [kindName(m.kind), relation, m.status !== "active" ? m.status : null, `truth ${num(m.truth_decayed ?? m.truth)}`]
    .filter(Boolean).join(" · ");
  const place = (x, y) => svg("a", { href: focus ? null : href(m.memory_id), "data-memory": m.memory_id,
      class: `node k-${m.kind}${focus ? " focus" : ""}${faded ? " faded" : ""}` },
    svg("title", {}, `${kindName(m.kind)}${focus ? " (this memory)" : ""}: ${m.text}`),
    svg("rect", { x, y, width: w, height: h, rx: 8, class: "box" }),
    svg("rect", { x, y, width: 5, height: h, rx: 2, class: `stripe fill-${m.kind}` }),
    svg("text", { x: x + PAD + 2, y: y + PAD + 8, class: "node-head" }, `${kindMark(m.kind)} ${head}`),
    lines.map((line, i) => svg("text", { x: x + PAD + 2, y: y + HEAD + PAD + 4 + i * LINE, class: "node-text" }, line)));
  return { h, place };
}

function arrowheads(id, edges) {
  return svg("defs", {}, [...new Set(edges)].map((edge) =>
    svg("marker", { id: `${id}-${edge}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7,
                    orient: "auto-start-reverse", class: `arrow edge-${edge}` }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z" }))));
}

function edgeLabel(text, x, y, edge) {
  return svg("g", { class: `edge-label edge-${edge}` },
    svg("rect", { x: x - text.length * 3.4 - 6, y: y - 10, width: text.length * 6.8 + 12, height: 18, rx: 9 }),
    svg("text", { x, y: y + 4, "text-anchor": "middle" }, text));
}

/**
 * A hub and its members, each joined to the hub by a labelled edge (`edge` names its style, `to`
 * where its arrow points: "hub" or "member"). Wide: the hub on the left, the members in a column on
 * the right, curved edges; narrow: the hub on top, the members below it along a spine.
 */
export function graph({ hub, members, focus, href, id, label }) {
  const box = el("div", { class: "graph", id, role: "img", "aria-label": label });
  sized(box, (width) => {
    const wide = width >= 560;
    const hubW = wide ? Math.min(320, width * 0.4) : width - 2;
    const memberW = wide ? Math.min(360, width - hubW - 130) : width - SPINE - 16;
    const hubCard = card(hub, hubW, { focus: hub.memory_id === focus, href });
    const cards = members.map((m) => card(m.memory, memberW, { relation: wide ? null : m.label,
                                                                focus: m.memory.memory_id === focus, href }));
    const column = cards.reduce((s, c) => s + c.h, 0) + GAP * Math.max(0, cards.length - 1);
    const chart = svg("svg", { width, class: "graph-svg" }, arrowheads(id, members.map((m) => m.edge)));
    const edges = [], nodes = [];
    let height;
    if (wide) {
      height = Math.max(column, hubCard.h) + 4;
      const hubY = (height - hubCard.h) / 2, hx = 1 + hubW, hy = hubY + hubCard.h / 2;
      const memberX = width - memberW - 2;
      nodes.push(hubCard.place(1, hubY));
      let y = (height - column) / 2;
      cards.forEach((c, i) => {
        const m = members[i], mid = y + c.h / 2;
        const [x1, y1, x2, y2] = m.to === "hub" ? [memberX, mid, hx, hy] : [hx, hy, memberX, mid];
        const bend = (x2 - x1) * 0.45;
        edges.push(svg("path", { d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`,
                                  class: `edge edge-${m.edge}`, "marker-end": `url(#${id}-${m.edge})` }));
        edges.push(edgeLabel(m.label, (hx + memberX) / 2, (hy + mid) / 2, m.edge));
        nodes.push(c.place(memberX, y));
        y += c.h + GAP;
      });
    } else {
      nodes.push(hubCard.place(1, 1));
      let y = hubCard.h + 1 + GAP;
      let last = y;
      cards.forEach((c, i) => {
        const m = members[i], mid = y + c.h / 2;
        const [x1, x2] = m.to === "hub" ? [SPINE + 16, SPINE] : [SPINE, SPINE + 16];
        edges.push(svg("path", { d: `M ${x1} ${mid} H ${x2}`, class: `edge edge-${m.edge}`,
                                  "marker-end": m.to === "hub" ? null : `url(#${id}-${m.edge})` }));
        nodes.push(c.place(SPINE + 16, y));
        last = mid;
        y += c.h + GAP;
      });
      if (cards.length) edges.unshift(svg("path", { d: `M ${SPINE} ${hubCard.h + 1} V ${last}`, class: "edge spine" }));
      height = y - GAP + 2;
    }
    chart.append(...edges, ...nodes);
    chart.setAttribute("height", String(Math.ceil(height)));
    chart.setAttribute("viewBox", `0 0 ${width} ${Math.ceil(height)}`);
    return chart;
  });
  return box;
}
