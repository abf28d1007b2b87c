// The Granary console: signs the admin API's calls with SigV4 in the
// browser (see console.go for the sign-in design), polls them, and draws
// what they answer. Only textContent and DOM nodes are written, never
// HTML, so no name from the node (a bucket, a key) can inject markup.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const region = document.querySelector('meta[name="granary-region"]').content || 'us-east-1';
  const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
  const enc = new TextEncoder();
  const REFRESH_MS = 5000, REFRESH_BUSY_MS = 1000;

  // session: {access, keys: Map(yyyymmdd -> non-extractable HMAC CryptoKey),
  // scope: 'node' | 'buckets'}; null when signed out.
  let session = null;
  let timer = null;

  // ---- SigV4 ----

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message || code || ('HTTP ' + status));
      this.status = status;
      this.code = code;
    }
  }
  class SessionEnded extends Error {}

  const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
  const sha256hex = async (s) => hex(await crypto.subtle.digest('SHA-256', enc.encode(s)));
  const ymd = (d) => d.toISOString().slice(0, 10).replace(/-/g, '');
  const amzDate = (d) => d.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

  async function hmac(keyBytes, msg) {
    const k = await crypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    return new Uint8Array(await crypto.subtle.sign('HMAC', k, enc.encode(msg)));
  }

  // signingKey derives the SigV4 key of one day and imports it so that
  // it can sign but never be read back.
  async function signingKey(secret, day) {
    let k = await hmac(enc.encode('AWS4' + secret), day);
    for (const part of [region, 's3', 'aws4_request']) {
      const next = await hmac(k, part);
      k.fill(0);
      k = next;
    }
    const key = await crypto.subtle.importKey('raw', k, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    k.fill(0);
    return key;
  }

  // AWS's URI encoding: everything but the unreserved characters.
  const awsEncode = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());

  // canonicalQuery sorts the parameters by name, then value, as the node does.
  function canonicalQuery(params) {
    const pairs = Object.entries(params || {}).filter(([, v]) => v !== undefined && v !== null);
    pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    return pairs.map(([k, v]) => awsEncode(k) + '=' + awsEncode(String(v))).join('&');
  }

  // call sends a signed, bodiless request and returns the answer's text,
  // or throws an ApiError with the node's S3 error code and message.
  async function call(s, method, path, params) {
    const now = new Date();
    const key = s.keys.get(ymd(now));
    if (!key) throw new SessionEnded('the session has ended');
    const date = amzDate(now), query = canonicalQuery(params);
    const scope = ymd(now) + '/' + region + '/s3/aws4_request';
    const signed = 'host;x-amz-content-sha256;x-amz-date';
    const canonical = [method, path, query,
      'host:' + location.host + '\nx-amz-content-sha256:' + EMPTY_SHA256 + '\nx-amz-date:' + date + '\n',
      signed, EMPTY_SHA256].join('\n');
    const toSign = ['AWS4-HMAC-SHA256', date, scope, await sha256hex(canonical)].join('\n');
    const sig = hex(await crypto.subtle.sign('HMAC', key, enc.encode(toSign)));
    const resp = await fetch(path + (query ? '?' + query : ''), {
      method, cache: 'no-store', credentials: 'omit', redirect: 'error',
      headers: {
        'x-amz-date': date, 'x-amz-content-sha256': EMPTY_SHA256,
        Authorization: 'AWS4-HMAC-SHA256 Credential=' + s.access + '/' + scope + ', SignedHeaders=' + signed + ', Signature=' + sig,
      },
    });
    const text = await resp.text();
    if (!resp.ok) {
      const doc = new DOMParser().parseFromString(text, 'application/xml');
      const field = (n) => (doc.getElementsByTagName(n)[0] || {}).textContent || '';
      throw new ApiError(resp.status, field('Code'), field('Message') || text.slice(0, 200));
    }
    return text;
  }
  const getJSON = async (s, method, path, params) => JSON.parse(await call(s, method, path, params));

  // listBuckets is S3's ListBuckets: the buckets the key may see.
  async function listBuckets(s) {
    const doc = new DOMParser().parseFromString(await call(s, 'GET', '/'), 'application/xml');
    return Array.from(doc.getElementsByTagName('Bucket'), (b) => b.getElementsByTagName('Name')[0].textContent);
  }

  // ---- sign-in ----

  async function signIn(ev) {
    ev.preventDefault();
    const err = $('signin-error');
    err.textContent = '';
    const secretField = $('secret-key');
    const access = $('access-key').value.trim(), secret = secretField.value;
    secretField.value = '';
    if (!window.isSecureContext || !window.crypto || !crypto.subtle) {
      err.textContent = 'The console needs HTTPS, or a loopback address (an SSH tunnel, kubectl port-forward): the browser signs only in a secure context.';
      return;
    }
    const now = new Date(), tomorrow = new Date(now.getTime() + 86400000);
    const s = { access, keys: new Map() };
    for (const d of [now, tomorrow]) s.keys.set(ymd(d), await signingKey(secret, ymd(d)));
    try {
      s.scope = await probeScope(s);
    } catch (e) {
      err.textContent = signInMessage(e);
      return;
    }
    session = s;
    $('signin-view').hidden = true;
    $('app').hidden = false;
    $('whoami').textContent = 'Signed in as ' + access + (s.scope === 'node' ? '' : ' (bucket admin)');
    $('whoami').hidden = $('signout').hidden = false;
    refresh();
  }

  // probeScope asks for the node-wide status; a key without node-wide
  // admin rights sees the buckets it administers, one by one.
  async function probeScope(s) {
    try {
      await call(s, 'GET', '/_granary/status');
      return 'node';
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== 'AccessDenied') throw e;
    }
    await bucketsView(s); // fails if the key administers no bucket
    return 'buckets';
  }

  function signInMessage(e) {
    if (e instanceof ApiError && (e.code === 'SignatureDoesNotMatch' || e.code === 'InvalidAccessKeyId')) {
      return 'Wrong access key or secret key (' + e.code + ').';
    }
    if (e instanceof ApiError && e.code === 'AccessDenied') return 'This key may not see anything on this node.';
    if (e instanceof ApiError && e.code === 'RequestTimeTooSkewed') return 'This computer\'s clock is too far from the node\'s.';
    return 'Sign-in failed: ' + e.message;
  }

  function signOut(message) {
    session = null;
    clearTimeout(timer);
    for (const tb of document.querySelectorAll('#app tbody')) tb.replaceChildren();
    for (const svg of document.querySelectorAll('#app svg')) svg.replaceChildren();
    for (const id of ['hitrate-now', 'throughput-now', 'charts-scope', 'app-error', 'whoami']) $(id).textContent = '';
    $('app').hidden = true;
    $('app').dataset.state = 'loading';
    $('whoami').hidden = $('signout').hidden = true;
    $('signin-view').hidden = false;
    $('signin-error').textContent = message || '';
  }

  // ---- loading ----

  // nodeView reads everything node-wide.
  async function nodeView(s) {
    const [st, hist, warm] = await Promise.all([
      getJSON(s, 'GET', '/_granary/status'), getJSON(s, 'GET', '/_granary/history'), getJSON(s, 'GET', '/_granary/warm')]);
    return Object.assign(splitStatus(st), { history: hist.points, historyScope: 'this node', originHistory: true, warm });
  }

  // bucketsView reads, for a bucket admin, the status and history of each
  // bucket it administers; the charts add up those buckets.
  async function bucketsView(s) {
    const names = await listBuckets(s);
    const views = [], histories = [];
    for (const b of names) {
      try {
        views.push(splitStatus(await getJSON(s, 'GET', '/_granary/status', { bucket: b })));
        histories.push((await getJSON(s, 'GET', '/_granary/history', { bucket: b })).points);
      } catch (e) {
        if (!(e instanceof ApiError) || e.code !== 'AccessDenied') throw e;
      }
    }
    if (views.length === 0) throw new ApiError(403, 'AccessDenied', 'this key administers no bucket on this node');
    const warm = await getJSON(s, 'GET', '/_granary/warm');
    const first = views[0];
    return {
      self: Object.assign({}, first.self, { buckets: views.flatMap((v) => v.self.buckets || []) }),
      members: first.members, history: sumPoints(histories),
      historyScope: 'your buckets on this node', originHistory: false, warm,
    };
  }

  // splitStatus takes a status answer (one node's, or a cluster's) apart:
  // this node's status and the members (null for a single node).
  function splitStatus(st) {
    if (!Array.isArray(st.nodes)) return { self: st, members: null };
    const self = (st.nodes[0] && st.nodes[0].status) || { tiers: [], buckets: [] };
    return { self, members: st.nodes };
  }

  function sumPoints(lists) {
    const byAt = new Map();
    for (const list of lists) {
      for (const p of list) {
        const q = byAt.get(p.at) || { at: p.at, seconds: p.seconds, hits: 0, misses: 0, bytesOut: 0 };
        q.hits += p.hits; q.misses += p.misses; q.bytesOut += p.bytesOut;
        byAt.set(p.at, q);
      }
    }
    return Array.from(byAt.values()).sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  }

  async function refresh() {
    clearTimeout(timer);
    const s = session;
    if (!s) return;
    let busy = false;
    try {
      const view = s.scope === 'node' ? await nodeView(s) : await bucketsView(s);
      if (session !== s) return;
      render(view);
      busy = view.warm.some((j) => j.state === 'running');
      $('app-error').textContent = '';
      $('app').dataset.state = 'ready';
    } catch (e) {
      if (session !== s) return;
      if (e instanceof SessionEnded) {
        signOut('Your session has ended: sign in again.');
        return;
      }
      $('app-error').textContent = 'Could not refresh: ' + (e.code ? e.code + ': ' : '') + e.message;
    }
    timer = setTimeout(refresh, busy ? REFRESH_BUSY_MS : REFRESH_MS);
  }

  // ---- rendering ----

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.dataset[k.slice(5).replace(/-(.)/g, (_, c) => c.toUpperCase())] = String(v);
      else e[k] = v;
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }
  // num is a table cell of a figure: formatted, with its raw value.
  const num = (v, fmt) => el('td', { class: 'num', 'data-value': v }, fmt ? fmt(v) : String(v));

  function bytes(n) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0, v = Number(n) || 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(v) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + units[i];
  }
  const rate = (n) => bytes(Math.round(n)) + '/s';
  const pct = (f) => (100 * f).toFixed(1) + '%';
  const when = (t) => (t ? new Date(t).toLocaleTimeString() : '');

  function setRows(tableId, rows) {
    document.querySelector('#' + tableId + ' tbody').replaceChildren(...rows);
  }

  function render(v) {
    renderTiers(v.self.tiers || []);
    renderCharts(v.history || [], v.historyScope);
    renderOrigin(v.self.origin, v.originHistory ? v.history : null);
    renderBuckets(v.self.buckets || []);
    renderWarm(v.warm || []);
    renderMembers(v.members);
  }

  function renderTiers(tiers) {
    setRows('tiers', tiers.map((t) => el('tr', { 'data-tier': t.name },
      el('td', {}, t.name), num(t.UsedBytes, bytes), num(t.CapacityBytes, bytes),
      el('td', {}, el('meter', { min: 0, max: t.CapacityBytes || 1, value: t.UsedBytes, high: 0.9 * (t.CapacityBytes || 1) })),
      num(t.Chunks), num(t.Evictions), num(t.Declined))));
  }

  function renderBuckets(buckets) {
    setRows('buckets', buckets.map((b) => el('tr', { 'data-bucket': b.bucket },
      el('td', {}, b.bucket), num(b.objects), num(b.bytes, bytes),
      el('td', { class: 'num', 'data-value': b.cachedPercent }, b.cachedPercent.toFixed(1) + '%'),
      el('td', { class: 'by-tier' }, Object.entries(b.cachedByTier || {}).map(([t, n]) => t + ' ' + bytes(n)).join(', ')),
      el('td', { class: 'pinned' }, (b.pinned || []).map((p) => (p === '' ? '(whole bucket)' : p)).join(', ') || '—'),
      el('td', { class: 'num', 'data-value': b.quota || 0 }, b.quota ? bytes(b.quota) + ' per tier' : 'none'),
      el('td', { class: 'num', 'data-value': b.hitRate }, b.hits + b.misses > 0 ? pct(b.hitRate) : '—'))));
  }

  function renderWarm(jobs) {
    const rows = jobs.slice().reverse().map((j) => {
      const total = j.spec.metadataOnly ? 0 : j.queuedBytes;
      const bar = j.state === 'running' && (j.listing || total === 0)
        ? el('progress', {}) // indeterminate while the listing runs
        : el('progress', { max: total || 1, value: total ? j.fetchedBytes : 1 });
      return el('tr', { 'data-job': j.id, 'data-state': j.state },
        el('td', {}, j.id), el('td', {}, 's3://' + j.spec.bucket + '/' + j.spec.prefix + (j.spec.metadataOnly ? ' (metadata)' : '')),
        el('td', { class: 'state' }, j.state + (j.error ? ': ' + j.error : '')), el('td', {}, bar),
        el('td', { class: 'num', 'data-value': j.fetched }, j.listed + ' listed, ' + j.fetched + ' fetched, ' + j.cached + ' cached' + (j.failed ? ', ' + j.failed + ' failed' : '')),
        num(j.fetchedBytes, bytes), el('td', {}, when(j.started)));
    });
    setRows('warmups', rows);
  }

  function renderMembers(members) {
    if (!members) {
      setRows('members', [el('tr', { 'data-member': 'self' }, el('td', {}, 'this node (no cluster)'), el('td', {}, location.host),
        el('td', { class: 'healthy' }, 'healthy'), el('td', { class: 'num', 'data-value': 1 }, '100%'))]);
      return;
    }
    setRows('members', members.map((m) => el('tr', { 'data-member': m.id },
      el('td', {}, m.id), el('td', {}, m.addr),
      el('td', { class: m.healthy ? 'healthy' : 'unhealthy' }, m.healthy ? 'healthy' : 'unreachable' + (m.error ? ': ' + m.error : '')),
      el('td', { class: 'num', 'data-value': m.ringShare || 0 }, pct(m.ringShare || 0)))));
  }

  // renderOrigin shows the origin's state as the status reports it (a
  // field "origin", when the node has one), and the origin traffic of
  // the last minute and five minutes from the node's history.
  function renderOrigin(state, history) {
    const rows = [];
    if (state && typeof state === 'object') {
      for (const [k, val] of Object.entries(state)) {
        rows.push(el('tr', { 'data-origin': k }, el('th', {}, k), el('td', {}, typeof val === 'object' ? JSON.stringify(val) : String(val))));
      }
    }
    if (history) {
      for (const [label, secs] of [['last minute', 60], ['last 5 minutes', 300]]) {
        const since = Date.now() - secs * 1000;
        const t = { req: 0, err: 0, bytes: 0 };
        for (const p of history) {
          if (Date.parse(p.at) >= since) { t.req += p.originRequests; t.err += p.originErrors; t.bytes += p.originBytes; }
        }
        const state = t.req === 0 ? 'idle' : t.err === 0 ? 'answering' : t.err === t.req ? 'failing' : 'some errors';
        rows.push(el('tr', { 'data-origin-window': secs }, el('th', {}, label),
          el('td', { class: t.err ? 'unhealthy' : '' }, state + ': ' + t.req + ' requests, ' + t.err + ' errors, ' + bytes(t.bytes) + ' read')));
      }
    }
    if (rows.length === 0) rows.push(el('tr', {}, el('td', { class: 'muted' }, 'The origin\'s figures need node-wide admin rights.')));
    setRows('origin', rows);
  }

  // ---- charts (plain SVG) ----

  const SVG = 'http://www.w3.org/2000/svg';
  function svgEl(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function renderCharts(points, scope) {
    $('charts-scope').textContent = '(' + scope + ', sampled every few seconds)';
    const hit = (p) => (p.hits + p.misses > 0 ? p.hits / (p.hits + p.misses) : null);
    const thr = (p) => (p.seconds > 0 ? p.bytesOut / p.seconds : null);
    drawChart($('chart-hitrate'), points, hit, pct, () => 1);
    drawChart($('chart-throughput'), points, thr, rate, (v) => niceMax(v, 1024));
    const last = (f) => { for (let i = points.length - 1; i >= 0; i--) { const v = f(points[i]); if (v !== null) return v; } return null; };
    const h = last(hit), t = points.length ? thr(points[points.length - 1]) : null;
    $('hitrate-now').textContent = h === null ? '' : pct(h);
    $('throughput-now').textContent = t === null ? '' : rate(t);
  }

  // drawChart plots f over the last hour: x is time, y from 0 to
  // top(the largest value). Intervals where f has no value (no lookups
  // for a hit rate) are left out; the latest value is marked with a dot.
  function drawChart(svg, points, f, fmt, top) {
    const W = 600, H = 160, L = 84, R = 10, T = 10, B = 22, span = 3600e3, now = Date.now();
    const pts = points.map((p) => [Date.parse(p.at), f(p)]).filter(([t, v]) => v !== null && t >= now - span);
    svg.dataset.points = pts.length;
    svg.replaceChildren();
    const ymax = top(Math.max(0, ...pts.map(([, v]) => v)));
    const x = (t) => L + ((t - (now - span)) / span) * (W - L - R);
    const y = (v) => T + (1 - v / ymax) * (H - T - B);
    for (const frac of [0, 0.5, 1]) {
      svg.append(svgEl('line', { class: 'grid', x1: L, x2: W - R, y1: y(ymax * frac), y2: y(ymax * frac) }));
      svg.append(svgEl('text', { class: 'axis', x: L - 6, y: y(ymax * frac) + 4, 'text-anchor': 'end' }, fmt(ymax * frac)));
    }
    for (const [label, ago] of [['-60 min', span], ['-30 min', span / 2], ['now', 0]]) {
      svg.append(svgEl('text', { class: 'axis', x: x(now - ago), y: H - 6, 'text-anchor': ago === span ? 'start' : ago === 0 ? 'end' : 'middle' }, label));
    }
    if (pts.length === 0) {
      svg.append(svgEl('text', { class: 'empty', x: (W + L) / 2, y: H / 2, 'text-anchor': 'middle' }, 'no traffic yet'));
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

  // ---- forms ----

  async function startWarm(ev) {
    ev.preventDefault();
    const err = $('warm-error');
    err.textContent = '';
    const params = { bucket: $('warm-bucket').value.trim(), prefix: $('warm-prefix').value };
    if ($('warm-metadata').checked) params['metadata-only'] = 'true';
    try {
      await getJSON(session, 'POST', '/_granary/warm', params);
    } catch (e) {
      err.textContent = (e.code ? e.code + ': ' : '') + e.message;
      return;
    }
    refresh();
  }

  async function search(ev) {
    ev.preventDefault();
    const err = $('search-error');
    err.textContent = '';
    setRows('search', []);
    const bucket = $('search-bucket').value.trim(), key = $('search-key').value;
    let st;
    try {
      st = await getJSON(session, 'GET', '/_granary/status', { bucket, key });
    } catch (e) {
      err.textContent = e.code === 'NoSuchKey' ? 'No such object.' : (e.code ? e.code + ': ' : '') + e.message;
      return;
    }
    const nodes = Array.isArray(st.nodes) ? st.nodes : [{ id: 'this node', healthy: true, status: st }];
    setRows('search', nodes.map((n) => {
      const o = n.status && n.status.object;
      if (!o) return el('tr', { 'data-member': n.id }, el('td', {}, n.id), el('td', { colSpan: 3, class: 'unhealthy' }, n.error || 'no answer'));
      return el('tr', { 'data-member': n.id }, el('td', {}, n.id), num(o.heldBytes, bytes), num(o.size, bytes),
        el('td', {}, Object.entries(o.heldByTier || {}).map(([t, b]) => t + ' ' + bytes(b)).join(', ')));
    }));
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('signin').addEventListener('submit', signIn);
    $('signout').addEventListener('click', () => signOut(''));
    $('warm-form').addEventListener('submit', startWarm);
    $('search-form').addEventListener('submit', search);
    document.body.dataset.ready = 'true';
  });
})();
