// The console's object browser: a bucket listed a folder (prefix and
// '/' delimiter) and a page at a time, each object with the share of it
// cached, on which member and in which tier, and actions: download (a
// presigned GET), pin or unpin (the pin calls), evict (the evict call).
// Listings come from GET /_granary/objects, which needs admin rights on
// the bucket and prefix, as every action does. The listing is read when
// asked for (a folder, a page, after an action), not on every refresh.
// Loaded after console.js, whose helpers (window.granary) it uses.
'use strict';
(() => {
  const G = window.granary;
  const $ = (id) => document.getElementById(id);
  const DOWNLOAD_SECONDS = 300;

  // view: the bucket and prefix shown, the cursor of each page so far
  // (afters[i] lists page i), the page shown, and the node's pins (null
  // when it keeps none). null while signed out; a load whose view was
  // replaced meanwhile draws nothing.
  let view = null;

  function signedIn() {
    view = { bucket: '', prefix: '', afters: [''], page: 0, pins: null };
    const v = view;
    G.listBuckets().then((names) => {
      if (view !== v) return;
      $('browse-bucket').replaceChildren(...names.map((n) => G.el('option', { value: n }, n)));
      if (names.length) open(names[0], '');
    }, (e) => { $('browse-error').textContent = G.errText(e); });
  }

  function signedOut() {
    view = null;
    $('browse-bucket').replaceChildren();
    $('browse-path').replaceChildren();
    $('browse-error').textContent = '';
    G.setRows('objects', []);
    $('objects-section').dataset.state = 'idle';
  }

  // open shows the first page of bucket/prefix.
  function open(bucket, prefix) {
    view = { bucket, prefix, afters: [''], page: 0, pins: null };
    $('browse-bucket').value = bucket;
    $('browse-prefix').value = prefix;
    load();
  }

  async function load() {
    const v = view;
    $('browse-error').textContent = '';
    $('objects-section').dataset.state = 'loading';
    let ans, pins;
    try {
      [ans, pins] = await Promise.all([
        G.getJSON('GET', '/_granary/objects', { bucket: v.bucket, prefix: v.prefix, delimiter: '/', after: v.afters[v.page] || undefined, 'max-keys': +$('browse-size').value || 50 }),
        G.getJSON('GET', '/_granary/pin').catch((e) => { if (e.code === 'NotImplemented') return null; throw e; })]);
    } catch (e) {
      if (view !== v) return;
      $('browse-error').textContent = G.errText(e);
      $('objects-section').dataset.state = 'error';
      return;
    }
    if (view !== v) return;
    v.pins = pins && pins.filter((p) => p.bucket === v.bucket);
    const page = merge(ans);
    if (!page) {
      $('browse-error').textContent = 'No member answered.';
      $('objects-section').dataset.state = 'error';
      return;
    }
    v.next = page.truncated ? page.nextAfter : null;
    render(v, page);
    $('objects-section').dataset.state = 'ready';
  }

  // merge turns an objects answer (one node's page, or a cluster's with
  // every member's) into the page shown: the first answering member's
  // listing, each object with what every member holds of that version.
  function merge(ans) {
    const cluster = Array.isArray(ans.nodes);
    const nodes = cluster ? ans.nodes : [{ id: '', healthy: true, status: ans }];
    const lead = nodes.find((n) => n.healthy && n.status);
    if (!lead) return null;
    const held = nodes.map((n) => {
      const byVersion = new Map();
      for (const o of (n.healthy && n.status && n.status.objects) || []) byVersion.set(o.key + '\0' + o.etag, o);
      return { id: n.id, error: n.healthy ? '' : n.error || 'no answer', byVersion };
    });
    const page = lead.status;
    for (const o of page.objects) o.members = held.map((h) => ({ id: h.id, error: h.error, o: h.byVersion.get(o.key + '\0' + o.etag) }));
    page.cluster = cluster;
    return page;
  }

  // pinOf is the pin that covers name (a key or a folder), the longest.
  function pinOf(v, name) {
    let best = null;
    for (const p of v.pins || []) if (name.startsWith(p.prefix) && (!best || p.prefix.length > best.prefix.length)) best = p;
    return best;
  }

  // ownHeld is what a member holds of an object as its own: the most of
  // any tier but the hot ones (hot, hot-disk), which keep copies of chunks
  // other members own.
  const ownHeld = (m) => (m.o ? Math.max(0, ...Object.entries(m.o.heldByTier || {}).filter(([t]) => t !== 'hot' && t !== 'hot-disk').map(([, n]) => n)) : 0);

  // cachedShare is the share of o the cluster (or node) holds, at most 1
  // (a chunk may have more than one owner); null for an empty object.
  function cachedShare(o) {
    if (o.size === 0) return null;
    return Math.min(1, o.members.reduce((n, m) => n + ownHeld(m), 0) / o.size);
  }

  // where says, per member, what share of o it holds in each tier.
  function where(o, cluster) {
    return o.members.map((m) => {
      const who = cluster ? m.id + ': ' : '';
      if (!m.o) return G.el('div', { class: m.error ? 'unhealthy' : 'muted' }, who + (m.error ? 'no answer' : 'not listed'));
      const share = (n) => (o.size ? G.pct(n / o.size) : '—');
      const tiers = Object.entries(m.o.heldByTier || {}).map(([t, n]) => t + ' ' + share(n)).join(', ');
      return G.el('div', { 'data-member': m.id }, who + share(m.o.heldBytes) + (tiers ? ' (' + tiers + ')' : ''));
    });
  }

  function render(v, page) {
    renderPath(v);
    const rows = page.prefixes.map((p) => G.el('tr', { 'data-kind': 'prefix', 'data-key': p },
      G.el('td', {}, G.el('button', { type: 'button', class: 'link', 'data-open': p }, p.slice(v.prefix.length))),
      G.el('td', { colSpan: 4, class: 'muted' }, 'folder'), pinCell(v, p), G.el('td', { class: 'actions' }, pinButton(v, p))));
    for (const o of page.objects) {
      const share = cachedShare(o);
      rows.push(G.el('tr', { 'data-kind': 'object', 'data-key': o.key },
        G.el('td', {}, o.key.slice(v.prefix.length)), G.num(o.size, G.bytes),
        G.el('td', {}, o.lastModified ? new Date(o.lastModified).toLocaleString() : ''),
        G.el('td', { class: 'num cached', 'data-value': share === null ? 1 : share },
          G.el('meter', { min: 0, max: 1, value: share === null ? 1 : share }), ' ', share === null ? 'empty' : G.pct(share)),
        G.el('td', { class: 'where' }, ...where(o, page.cluster)), pinCell(v, o.key),
        G.el('td', { class: 'actions' },
          G.el('button', { type: 'button', class: 'small', 'data-download': o.key }, 'Download'), pinButton(v, o.key),
          G.el('button', { type: 'button', class: 'small', 'data-evict': o.key }, 'Evict'))));
    }
    if (rows.length === 0) rows.push(G.el('tr', {}, G.el('td', { colSpan: 7, class: 'muted' }, 'Nothing here.')));
    G.setRows('objects', rows);
    $('browse-prev').disabled = v.page === 0;
    $('browse-next').disabled = !v.next;
    $('browse-page').textContent = 'page ' + (v.page + 1) + (v.next ? '' : ' (last)');
  }

  function pinCell(v, name) {
    const p = pinOf(v, name);
    const text = !p ? '—' : p.prefix === name ? 'pinned' + (p.configured ? ' (configuration file)' : '')
      : 'pinned via ' + (p.prefix === '' ? 'the whole bucket' : p.prefix);
    return G.el('td', { class: 'pinned', 'data-pinned': !!p }, text);
  }

  // pinButton pins name, or unpins it when a pin of its own (not one of
  // the configuration file) covers it; none where a pin above it does.
  function pinButton(v, name) {
    if (v.pins === null) return '';
    const p = pinOf(v, name);
    if (!p) return G.el('button', { type: 'button', class: 'small', 'data-pin': name }, 'Pin');
    if (p.prefix === name && !p.configured) return G.el('button', { type: 'button', class: 'small', 'data-unpin': name }, 'Unpin');
    return '';
  }

  // renderPath shows the prefix as a path whose every folder opens.
  function renderPath(v) {
    const parts = [G.el('button', { type: 'button', class: 'link', 'data-open': '' }, 's3://' + v.bucket + '/')];
    let at = '';
    for (const seg of v.prefix.split('/').slice(0, -1)) {
      at += seg + '/';
      parts.push(G.el('button', { type: 'button', class: 'link', 'data-open': at }, seg + '/'));
    }
    const rest = v.prefix.slice(at.length);
    if (rest) parts.push(G.el('span', {}, rest + '…'));
    $('browse-path').replaceChildren(...parts);
  }

  // act runs an action from a button, then lists the page again.
  async function act(button, what) {
    const v = view;
    button.disabled = true;
    try {
      await what(v);
    } catch (e) {
      if (view === v) $('browse-error').textContent = G.errText(e);
    }
    if (view === v) load();
  }

  // download fetches key through a link signed for a few minutes (the
  // secret never leaves the page; the link carries a signature only).
  async function download(v, key, button) {
    const path = '/' + v.bucket + '/' + key.split('/').map(G.awsEncode).join('/');
    const url = await G.presign(path, {}, DOWNLOAD_SECONDS);
    button.dataset.href = url;
    const a = G.el('a', { href: url, download: key.slice(key.lastIndexOf('/') + 1) });
    document.body.append(a);
    a.click();
    a.remove();
  }

  function onClick(ev) {
    const b = ev.target.closest('button');
    if (!b || !view) return;
    const d = b.dataset;
    if (d.open !== undefined) open(view.bucket, d.open);
    else if (d.download !== undefined) download(view, d.download, b).catch((e) => { $('browse-error').textContent = G.errText(e); });
    else if (d.pin !== undefined) act(b, (v) => G.getJSON('POST', '/_granary/pin', { bucket: v.bucket, prefix: d.pin }));
    else if (d.unpin !== undefined) act(b, (v) => G.getJSON('DELETE', '/_granary/pin', { bucket: v.bucket, prefix: d.unpin }));
    else if (d.evict !== undefined) act(b, (v) => G.getJSON('POST', '/_granary/evict', { bucket: v.bucket, key: d.evict }));
  }

  G.panels.push({ signedIn, signedOut });
  document.addEventListener('DOMContentLoaded', () => {
    $('objects').addEventListener('click', onClick);
    $('browse-path').addEventListener('click', onClick);
    $('browse-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      if (!view) return;
      if ($('browse-bucket').options.length === 0) signedIn(); // the buckets' list failed: ask again
      else open($('browse-bucket').value, $('browse-prefix').value);
    });
    $('browse-size').addEventListener('change', () => { if (view) open(view.bucket, view.prefix); });
    $('browse-prev').addEventListener('click', () => { if (view && view.page > 0) { view.page--; load(); } });
    $('browse-next').addEventListener('click', () => {
      if (view && view.next) { view.afters[view.page + 1] = view.next; view.page++; load(); }
    });
  });
})();
