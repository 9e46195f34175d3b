// The page's charts as inline SVG: the running totals (one line per seat over the hands played, from
// the scoresheet, with the target score dashed) and a hand review's points lost (one bar per trick).

const SVG = "http://www.w3.org/2000/svg";
const W = 320;
const H = 190;
const PAD = { left: 34, right: 12, top: 12, bottom: 34 };

function node(tag, attrs = {}, text = null) {
  const item = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) item.setAttribute(k, String(v));
  if (text !== null) item.textContent = text;
  return item;
}

/** rows: the scoresheet; names: a short name per seat; mine: your seat (drawn thicker) or null. */
export function totalsChart({ rows, names, target, title, description, handLabel, mine }) {
  const seats = names.length;
  const series = names.map((_, s) => [0, ...rows.map((row) => row.totals[s])]);
  const all = series.flat();
  const low = Math.min(0, ...all);
  const high = Math.max(target, ...all);
  const x = (i) => PAD.left + (i * (W - PAD.left - PAD.right)) / Math.max(1, rows.length);
  const y = (v) => PAD.top + ((high - v) * (H - PAD.top - PAD.bottom)) / Math.max(1, high - low);

  const svg = node("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "chart-t chart-d", class: "totals" });
  svg.append(node("title", { id: "chart-t" }, title), node("desc", { id: "chart-d" }, description));

  // Axes: zero, the target, and a tick per hand.
  const grid = node("g", { class: "grid" });
  for (const value of new Set([low, 0, Math.round(target / 2), target])) {
    grid.append(node("line", { x1: PAD.left, x2: W - PAD.right, y1: y(value), y2: y(value), class: value === target ? "target" : "" }));
    grid.append(node("text", { x: PAD.left - 4, y: y(value) + 3, "text-anchor": "end" }, String(value)));
  }
  const step = Math.ceil(rows.length / 10);
  for (let i = 0; i <= rows.length; i += step) {
    grid.append(node("text", { x: x(i), y: H - 20, "text-anchor": "middle" }, String(i)));
  }
  grid.append(node("text", { x: (PAD.left + W - PAD.right) / 2, y: H - 5, "text-anchor": "middle", class: "axis-name" }, handLabel));
  svg.append(grid);

  for (let s = 0; s < seats; s += 1) {
    const points = series[s].map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    const line = node("polyline", {
      points,
      class: `line seat-${s % 8}${s === mine ? " mine" : ""}`,
      "data-seat": s,
      "data-totals": series[s].slice(1).join(","),
    });
    line.append(node("title", {}, `${names[s]}: ${series[s].slice(1).join(", ")}`));
    svg.append(line);
    const end = series[s].length - 1;
    svg.append(node("circle", { cx: x(end), cy: y(series[s][end]), r: 3, class: `dot seat-${s % 8}` }));
  }

  const wrap = document.createElement("figure");
  wrap.className = "chart-figure";
  wrap.append(svg);
  const legend = document.createElement("figcaption");
  legend.className = "legend";
  names.forEach((name, s) => {
    const item = document.createElement("span");
    item.className = `key seat-${s % 8}`;
    item.textContent = `${name} ${series[s][series[s].length - 1]}`;
    legend.append(item);
  });
  wrap.append(legend);
  return wrap;
}

/** A hand's review as an inline SVG bar chart: one bar per trick, as high as the points the seat
 * lost there against the bot's choice (a trick lost nothing: no bar above the axis, still counted).
 * tricks: the review's tricks ({trick, points_lost}); total: its total_points_lost. */
export function lossChart({ tricks, total, title, description, trickLabel, totalText, format }) {
  const most = Math.max(1, ...tricks.map((trick) => trick.points_lost));
  const high = Math.ceil(most);
  const width = (W - PAD.left - PAD.right) / Math.max(1, tricks.length);
  const y = (v) => PAD.top + ((high - v) * (H - PAD.top - PAD.bottom)) / high;

  const svg = node("svg", {
    viewBox: `0 0 ${W} ${H}`,
    role: "img",
    "aria-labelledby": "loss-t loss-d",
    class: "losses",
    "data-total": total,
  });
  svg.append(node("title", { id: "loss-t" }, title), node("desc", { id: "loss-d" }, description));

  const grid = node("g", { class: "grid" });
  for (const value of new Set([0, high / 2, high])) {
    grid.append(node("line", { x1: PAD.left, x2: W - PAD.right, y1: y(value), y2: y(value) }));
    grid.append(node("text", { x: PAD.left - 4, y: y(value) + 3, "text-anchor": "end" }, format(value)));
  }
  grid.append(node("text", { x: (PAD.left + W - PAD.right) / 2, y: H - 5, "text-anchor": "middle", class: "axis-name" }, trickLabel));
  svg.append(grid);

  tricks.forEach((trick, i) => {
    const left = PAD.left + i * width;
    const lost = Math.max(0, trick.points_lost);
    const bar = node("rect", {
      x: (left + width * 0.15).toFixed(1),
      y: y(lost).toFixed(1),
      width: (width * 0.7).toFixed(1),
      height: Math.max(0, y(0) - y(lost)).toFixed(1),
      class: `bar${lost > 0 ? " lost" : ""}`,
      "data-trick": trick.trick,
      "data-points-lost": trick.points_lost,
    });
    bar.append(node("title", {}, `${trickLabel} ${trick.trick}: ${format(trick.points_lost)}`));
    svg.append(bar);
    svg.append(node("text", { x: left + width / 2, y: H - 20, "text-anchor": "middle", class: "tick" }, String(trick.trick)));
  });

  const wrap = document.createElement("figure");
  wrap.className = "chart-figure";
  wrap.append(svg);
  const caption = document.createElement("figcaption");
  caption.className = "legend loss-total";
  caption.textContent = totalText;
  wrap.append(caption);
  return wrap;
}
