// The console's origin panel: the origin's health as the status reports
// it (its guard's view), in words, with a banner over the page while the
// origin is down or its breaker open; and its traffic of the last minute
// and five minutes from the node's history. An origin's answer such as
// NoSuchKey for a missing key is no failure: the history counts as
// failed only the calls that found the origin unreachable or the breaker
// open. Loaded after console.js; console.js calls granary.renderOrigin.
'use strict';
(() => {
  const G = window.granary;
  const $ = (id) => document.getElementById(id);

  const CAUSES = {
    refused: 'nothing listens at its address', timeout: 'it did not answer in time',
    reset: 'connections broke mid-answer', 'server error': 'it answered with server errors',
    denied: 'it refused the node\'s credentials', error: 'calls failed',
  };
  const cause = (c) => CAUSES[c] || c;
  const n = (k, what) => k + ' ' + what + (k === 1 ? '' : 's');

  // The fields of the health, in order: label, and how to show a value
  // (a field missing or empty is left out).
  const FIELDS = [
    ['name', 'Origin', String],
    ['state', 'State', (v, h) => ({ up: 'up: answering', down: 'down', unknown: 'not asked yet' })[v] || v],
    ['since', 'Since', (v) => G.at(v)],
    ['breaker', 'Circuit breaker', (v) => (v === 'open' ? 'open: calls fail at once while a probe waits for the origin' : 'closed: calls go through')],
    ['cause', 'Cause', cause],
    ['lastError', 'Last failure', String],
    ['lastErrorAt', 'Last failure at', (v) => G.at(v)],
    ['timeoutSeconds', 'Timeout per call', (v) => v + ' s'],
    ['failures', 'Calls that found it unreachable', String],
    ['timeouts', '… of them timed out', String],
    ['rejected', 'Calls failed by the open breaker', String],
  ];

  G.renderOrigin = (h, history) => {
    const rows = [];
    if (h && typeof h === 'object') {
      for (const [k, label, show] of FIELDS) {
        const v = h[k];
        if (v === undefined || v === null || v === '') continue;
        if ((k === 'since' || k === 'lastErrorAt') && !(Date.parse(v) > 0)) continue; // the zero time: never
        const cls = (k === 'state' && v === 'down') || (k === 'breaker' && v === 'open') ? 'unhealthy' : k === 'state' && v === 'up' ? 'healthy' : '';
        rows.push(G.el('tr', { 'data-origin': k }, G.el('th', {}, label), G.el('td', { class: cls, 'data-value': v }, show(v, h))));
      }
    }
    renderBanner(h);
    if (history) {
      for (const [label, secs] of [['Last minute', 60], ['Last 5 minutes', 300]]) {
        const since = Date.now() - secs * 1000;
        const t = { req: 0, err: 0, bytes: 0 };
        for (const p of history) {
          if (Date.parse(p.at) >= since) { t.req += p.originRequests; t.err += p.originErrors; t.bytes += p.originBytes; }
        }
        const state = t.req === 0 && t.err === 0 ? 'idle' : t.err === 0 ? 'answering' : t.err >= t.req ? 'failing' : 'some calls failed';
        rows.push(G.el('tr', { 'data-origin-window': secs }, G.el('th', {}, label),
          G.el('td', { class: t.err ? 'unhealthy' : '' }, state + ': ' + n(t.req, 'request') + ' sent, ' + n(t.err, 'call') + ' failed, ' + G.bytes(t.bytes) + ' read')));
      }
    }
    if (rows.length === 0) rows.push(G.el('tr', {}, G.el('td', { class: 'muted' }, 'The origin\'s figures need node-wide admin rights.')));
    G.setRows('origin', rows);
  };

  // renderBanner shows, over the page, that the origin is down or its
  // breaker open: what is cached is still served, the rest fails.
  function renderBanner(h) {
    const banner = $('origin-banner');
    const down = h && (h.state === 'down' || h.breaker === 'open');
    banner.hidden = !down;
    if (!down) {
      banner.replaceChildren();
      return;
    }
    const why = h.cause ? ': ' + cause(h.cause) : '';
    banner.replaceChildren(G.el('strong', {}, 'Origin ' + (h.name ? h.name + ' ' : '') + 'is down' + why + '.'),
      ' Since ' + G.at(h.since) + '; the circuit breaker is ' + (h.breaker || 'open') +
      '. Cached data is still served; reads of anything else fail until the origin answers again.');
  }
})();
