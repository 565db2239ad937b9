// Line charts drawn as SVG, for the console's live charts. No library: a chart is a
// few axes, grid lines and one polyline per series.
"use strict";

const CHART_COLORS = ["#1f6feb", "#cf222e", "#1a7f37", "#b35900", "#8250df", "#0a7b83"];
const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function fmtNum(v) {
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (Math.abs(v) >= 1e3) return (v / 1e3).toFixed(1) + "k";
  if (v !== 0 && Math.abs(v) < 1) return v.toPrecision(2);
  return String(Math.round(v * 100) / 100);
}

// drawLineChart renders series ([{name, points: [[ms, value], ...]}]) into an SVG over
// the window [now - spanMs, now], and returns the chart's element.
function drawLineChart(title, unit, series, spanMs, now) {
  const W = 560, H = 200, L = 48, R = 10, T = 10, B = 22;
  const box = document.createElement("div");
  box.className = "chart";
  box.dataset.chart = title;
  const h3 = document.createElement("h3");
  h3.textContent = title + (unit ? " (" + unit + ")" : "");
  box.appendChild(h3);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none",
    role: "img", "aria-label": title });
  let maxV = 0;
  for (const s of series) for (const [, v] of s.points) if (v > maxV) maxV = v;
  const top = niceMax(maxV);
  const x = (t) => L + ((t - (now - spanMs)) / spanMs) * (W - L - R);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }));
    const label = svgEl("text", { x: L - 4, y: y(v) + 3, "text-anchor": "end" });
    label.textContent = fmtNum(v);
    svg.appendChild(label);
  }
  const step = spanMs <= 90000 ? 15000 : 60000;
  for (let m = 0; m * step <= spanMs; m++) {
    const tx = x(now - m * step);
    const label = svgEl("text", { x: tx, y: H - 6, "text-anchor": "middle" });
    label.textContent = m === 0 ? "now" : step < 60000 ? "-" + (m * step) / 1000 + "s" :
      "-" + m + "m";
    svg.appendChild(label);
  }
  svg.appendChild(svgEl("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }));
  svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }));
  series.forEach((s, i) => {
    const pts = s.points.filter(([t]) => t >= now - spanMs)
      .map(([t, v]) => x(t).toFixed(1) + "," + y(v).toFixed(1)).join(" ");
    if (pts) {
      svg.appendChild(svgEl("polyline", { points: pts, class: "line",
        stroke: CHART_COLORS[i % CHART_COLORS.length], "data-series": s.name }));
    }
  });
  box.appendChild(svg);
  const legend = document.createElement("div");
  legend.className = "legend";
  series.forEach((s, i) => {
    const item = document.createElement("span");
    const sw = document.createElement("span");
    sw.className = "sw sw" + (i % CHART_COLORS.length);
    item.appendChild(sw);
    const last = s.points.length ? s.points[s.points.length - 1][1] : null;
    item.appendChild(document.createTextNode(s.name + (last === null ? "" :
      ": " + fmtNum(last))));
    legend.appendChild(item);
  });
  if (series.length === 0) legend.textContent = "no data yet";
  box.appendChild(legend);
  return box;
}

// quantile is the q-quantile of the observations between two samples of a cumulative
// histogram (bounds ascending, counts cumulative, count including +Inf), interpolated
// within its bucket as Prometheus's histogram_quantile does; null without observations.
function quantile(q, bounds, before, after, countBefore, countAfter) {
  const total = countAfter - countBefore;
  if (!(total > 0)) return null;
  const rank = q * total;
  let prevCount = 0, prevBound = 0;
  for (let i = 0; i < bounds.length; i++) {
    const c = after[i] - (before ? before[i] : 0);
    if (c >= rank) {
      const inBucket = c - prevCount;
      const frac = inBucket > 0 ? (rank - prevCount) / inBucket : 1;
      return prevBound + (bounds[i] - prevBound) * frac;
    }
    prevCount = c;
    prevBound = bounds[i];
  }
  return bounds.length ? bounds[bounds.length - 1] : null;
}
