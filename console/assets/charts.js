// The console's charts: hit rate and throughput of the node's history
// (the last hour, sampled every few seconds), drawn as plain SVG over a
// time range the operator picks. Loaded after console.js, whose helpers
// (window.granary) it uses; console.js calls granary.renderCharts.
'use strict';
(() => {
  const G = window.granary;
  const $ = (id) => document.getElementById(id);
  const SVG = 'http://www.w3.org/2000/svg';

  // The last points and scope drawn, redrawn when the range changes.
  let last = { points: [], scope: '' };

  function svgEl(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // span is the range picked, in milliseconds (the history keeps an hour).
  const span = () => 60e3 * (+$('chart-range').value || 60);

  G.renderCharts = (points, scope) => {
    last = { points, scope };
    const minutes = span() / 60e3;
    $('charts-scope').textContent = '(' + scope + ', sampled every few seconds)';
    $('charts-title').textContent = minutes === 60 ? 'Last hour' : 'Last ' + minutes + ' minutes';
    const hit = (p) => (p.hits + p.misses > 0 ? p.hits / (p.hits + p.misses) : null);
    const thr = (p) => (p.seconds > 0 ? p.bytesOut / p.seconds : null);
    drawChart($('chart-hitrate'), points, hit, G.pct, () => 1);
    drawChart($('chart-throughput'), points, thr, G.rate, (v) => niceMax(v, 1024));
    const latest = (f) => { for (let i = points.length - 1; i >= 0; i--) { const v = f(points[i]); if (v !== null) return v; } return null; };
    const h = latest(hit), t = points.length ? thr(points[points.length - 1]) : null;
    $('hitrate-now').textContent = h === null ? '' : G.pct(h);
    $('throughput-now').textContent = t === null ? '' : G.rate(t);
  };

  // drawChart plots f over the range picked: x is time, y from 0 to
  // top(the largest value). Intervals where f has no value (no client
  // reads for a hit rate) are left out; the latest value is marked with
  // a dot.
  function drawChart(svg, points, f, fmt, top) {
    const W = 600, H = 160, L = 84, R = 10, T = 10, B = 22, sp = span(), now = Date.now();
    const pts = points.map((p) => [Date.parse(p.at), f(p)]).filter(([t, v]) => v !== null && t >= now - sp);
    svg.dataset.points = pts.length;
    svg.dataset.span = sp / 1000;
    svg.replaceChildren();
    const ymax = top(Math.max(0, ...pts.map(([, v]) => v)));
    const x = (t) => L + ((t - (now - sp)) / sp) * (W - L - R);
    const y = (v) => T + (1 - v / ymax) * (H - T - B);
    for (const frac of [0, 0.5, 1]) {
      svg.append(svgEl('line', { class: 'grid', x1: L, x2: W - R, y1: y(ymax * frac), y2: y(ymax * frac) }));
      svg.append(svgEl('text', { class: 'axis', x: L - 6, y: y(ymax * frac) + 4, 'text-anchor': 'end' }, fmt(ymax * frac)));
    }
    const min = sp / 60e3;
    for (const [label, ago] of [['-' + min + ' min', sp], ['-' + min / 2 + ' min', sp / 2], ['now', 0]]) {
      svg.append(svgEl('text', { class: 'axis', x: x(now - ago), y: H - 6, 'text-anchor': ago === sp ? 'start' : ago === 0 ? 'end' : 'middle' }, label));
    }
    if (pts.length === 0) {
      svg.append(svgEl('text', { class: 'empty', x: (W + L) / 2, y: H / 2, 'text-anchor': 'middle' }, 'no client reads yet'));
      return;
    }
    svg.append(svgEl('polyline', { class: 'line', points: pts.map(([t, v]) => x(t).toFixed(1) + ',' + y(v).toFixed(1)).join(' ') }));
    const [lt, lv] = pts[pts.length - 1];
    svg.append(svgEl('circle', { class: 'dot', cx: x(lt).toFixed(1), cy: y(lv).toFixed(1), r: 3 }));
  }

  // niceMax rounds v up to 1, 2 or 5 times a power of ten, in the units
  // of base (1024 for bytes: 1, 2, 5, 10, 20, 50... KiB, MiB).
  function niceMax(v, base) {
    if (v <= 0) return 1;
    let unit = 1;
    while (v / unit >= base) unit *= base;
    const m = v / unit, p = Math.pow(10, Math.floor(Math.log10(m)));
    for (const k of [1, 2, 5, 10]) if (k * p >= m) return k * p * unit;
    return 10 * p * unit;
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('chart-range').addEventListener('change', () => G.renderCharts(last.points, last.scope));
  });
})();
