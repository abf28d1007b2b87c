// The Granary console: signs the admin API's calls with SigV4 in the
// browser (see console.go for the sign-in design), polls them, and draws
// what they answer. Only textContent and DOM nodes are written, never
// HTML, so no name from the node (a bucket, a key) can inject markup.
// The other scripts (charts.js, origin.js, browser.js, writeback.js) use what this one shares in
// window.granary: its helpers, calls signed for the current session, and
// the panels' hooks (signedIn, signedOut).
'use strict';
(() => {
  const G = window.granary = { panels: [] };
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

  // presign returns a URL that GETs path for the next `expires` seconds
  // without headers (SigV4 in the query), for a download link.
  async function presign(s, path, params, expires) {
    const now = new Date();
    const key = s.keys.get(ymd(now));
    if (!key) throw new SessionEnded('the session has ended');
    const date = amzDate(now), scope = ymd(now) + '/' + region + '/s3/aws4_request';
    const query = canonicalQuery(Object.assign({}, params, {
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256', 'X-Amz-Credential': s.access + '/' + scope,
      'X-Amz-Date': date, 'X-Amz-Expires': String(expires), 'X-Amz-SignedHeaders': 'host',
    }));
    const canonical = ['GET', path, query, 'host:' + location.host + '\n', 'host', 'UNSIGNED-PAYLOAD'].join('\n');
    const toSign = ['AWS4-HMAC-SHA256', date, scope, await sha256hex(canonical)].join('\n');
    const sig = hex(await crypto.subtle.sign('HMAC', key, enc.encode(toSign)));
    return path + '?' + query + '&X-Amz-Signature=' + sig;
  }

  // The calls the other scripts make, signed for the current session.
  const current = () => { if (!session) throw new SessionEnded('signed out'); return session; };
  Object.assign(G, {
    ApiError, awsEncode,
    call: (method, path, params) => call(current(), method, path, params),
    getJSON: (method, path, params) => getJSON(current(), method, path, params),
    presign: (path, params, expires) => presign(current(), path, params, expires),
    listBuckets: () => listBuckets(current()),
    errText: (e) => (e.code ? e.code + ': ' : '') + e.message,
    refresh: () => refresh(),
  });

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
    for (const p of G.panels) p.signedIn();
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
    $('origin-banner').hidden = true;
    for (const p of G.panels) p.signedOut();
  }

  // ---- loading ----

  // nodeView reads everything node-wide.
  async function nodeView(s) {
    const [st, hist, warm, writeBack] = await Promise.all([
      getJSON(s, 'GET', '/_granary/status'), getJSON(s, 'GET', '/_granary/history'), getJSON(s, 'GET', '/_granary/warm'),
      getJSON(s, 'GET', '/_granary/writeback')]);
    const v = splitStatus(st);
    return Object.assign(v, { history: hist.points, historyScope: 'this node', originHistory: true, warm: allWarm(warm, v.members), writeBack });
  }

  // allWarm is this node's warm-ups and, in a cluster, every other
  // member's from its status (cancelled through this node, by member),
  // oldest first.
  function allWarm(warm, members) {
    const jobs = warm.slice();
    for (const m of (members || []).slice(1)) {
      for (const j of (m.status && m.status.warmups) || []) jobs.push(Object.assign({ member: m.id }, j));
    }
    return jobs.sort((a, b) => Date.parse(a.started) - Date.parse(b.started));
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
      historyScope: 'your buckets on this node', originHistory: false, warm: allWarm(warm, first.members),
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

  // ago is how long before now t was, in words ("4 min ago").
  function ago(t) {
    const s = Math.max(0, Math.round((Date.now() - Date.parse(t)) / 1000));
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min ago';
    return Math.floor(s / 86400) + ' days ago';
  }
  // at is a time in words: the local time, the date too if not today,
  // and how long ago.
  function at(t) {
    const d = new Date(t);
    const day = d.toDateString() === new Date().toDateString() ? '' : d.toLocaleDateString() + ' ';
    return day + d.toLocaleTimeString() + ' (' + ago(t) + ')';
  }
  Object.assign(G, { el, num, bytes, rate, pct, when, at, ago, setRows });

  function render(v) {
    renderTiers(v.self.tiers || []);
    G.renderCharts(v.history || [], v.historyScope);
    G.renderOrigin(v.self.origin, v.originHistory ? v.history : null);
    renderBuckets(v.self.buckets || []);
    renderWarm(v.warm || []);
    renderMembers(v.members);
    G.renderWriteBack(v.writeBack); // node-wide only: a bucket admin's view has none
  }

  function renderTiers(tiers) {
    setRows('tiers', tiers.map((t) => el('tr', { 'data-tier': t.name },
      el('td', {}, t.name), num(t.usedBytes, bytes), num(t.capacityBytes, bytes),
      el('td', {}, el('meter', { min: 0, max: t.capacityBytes || 1, value: t.usedBytes, high: 0.9 * (t.capacityBytes || 1) })),
      num(t.chunks), num(t.evictions), num(t.declined))));
  }

  // renderBuckets shows what status reports per bucket, as granary status
  // does: the objects and bytes the catalog lists (warm-ups and listings
  // put them there), the share of those bytes cached, and what each tier
  // holds of the whole bucket (written objects too, listed or not).
  function renderBuckets(buckets) {
    setRows('buckets', buckets.map((b) => el('tr', { 'data-bucket': b.bucket },
      el('td', {}, b.bucket), num(b.objects), num(b.bytes, bytes),
      el('td', { class: 'num', 'data-value': b.cachedPercent, title: b.objects ? '' : 'nothing listed yet: a warm-up (metadata only is enough) lists the bucket' },
        b.objects ? b.cachedPercent.toFixed(1) + '%' : '—'),
      num((b.tierBytes || {}).ram || 0, bytes), num((b.tierBytes || {}).disk || 0, bytes),
      el('td', { class: 'pinned' }, (b.pinned || []).map((p) => (p === '' ? '(whole bucket)' : p)).join(', ') || '—'),
      el('td', { class: 'num', 'data-value': b.quota || 0 }, b.quota ? bytes(b.quota) + ' per tier' : 'none'),
      el('td', { class: 'num', 'data-value': b.hitRate }, b.hits + b.misses > 0 ? pct(b.hitRate) + ' of ' + (b.hits + b.misses) : '—'))));
  }

  // renderWarm shows the warm-ups of every member (a cluster's status
  // has each member's), with a cancel button for every running one.
  function renderWarm(jobs) {
    const rows = jobs.slice().reverse().map((j) => {
      const total = j.spec.metadataOnly ? 0 : j.queuedBytes;
      const bar = j.state === 'running' && (j.listing || total === 0)
        ? el('progress', {}) // indeterminate while the listing runs
        : el('progress', { max: total || 1, value: total ? j.fetchedBytes : 1 });
      const cancel = j.state === 'running' ? el('button', { type: 'button', class: 'small', 'data-cancel': j.id, 'data-cancel-member': j.member || '' }, 'Cancel') : '';
      return el('tr', { 'data-job': j.id, 'data-state': j.state, 'data-member': j.member || '' },
        el('td', {}, j.id + (j.member ? ' on ' + j.member : '')), el('td', {}, 's3://' + j.spec.bucket + '/' + j.spec.prefix + (j.spec.metadataOnly ? ' (metadata)' : '')),
        el('td', { class: 'state' }, j.state + (j.error ? ': ' + j.error : ''), cancel), el('td', {}, bar),
        el('td', { class: 'num', 'data-value': j.fetched }, j.listed + ' listed, ' + j.fetched + ' fetched, ' + j.cached + ' already cached' + (j.failed ? ', ' + j.failed + ' failed' : '')),
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

  async function cancelWarm(ev) {
    const b = ev.target.closest('button[data-cancel]');
    if (!b) return;
    b.disabled = true;
    try {
      const params = { id: b.dataset.cancel };
      if (b.dataset.cancelMember) params.member = b.dataset.cancelMember;
      await getJSON(session, 'DELETE', '/_granary/warm', params);
    } catch (e) {
      $('warm-error').textContent = G.errText(e);
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
    $('warmups').addEventListener('click', cancelWarm);
    document.body.dataset.ready = 'true';
  });
})();
