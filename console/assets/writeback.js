// The console's write-back panel: what this node's write-back log still
// owes the origin (GET /_granary/writeback, node-wide admins only), the
// limit past which writes are slowed, the uploads done and failed, and a
// form that flushes a bucket or prefix (POST /_granary/flush, which
// answers once the flush ends). Hidden on a node without a write-back
// log. Loaded after console.js; console.js calls granary.renderWriteBack.
'use strict';
(() => {
  const G = window.granary;
  const $ = (id) => document.getElementById(id);

  G.renderWriteBack = (wb) => {
    $('writeback-section').hidden = !(wb && wb.enabled);
    if (!wb || !wb.enabled) return;
    const limit = wb.limitBytes > 0;
    G.setRows('writeback', [
      G.el('tr', { 'data-writeback': 'dirty' }, G.el('th', {}, 'Waiting for the origin'),
        G.el('td', { 'data-value': wb.dirtyBytes }, wb.dirtyObjects + (wb.dirtyObjects === 1 ? ' object, ' : ' objects, ') + G.bytes(wb.dirtyBytes) + ' ',
          limit ? G.el('meter', { min: 0, max: wb.limitBytes, value: wb.dirtyBytes, high: 0.8 * wb.limitBytes }) : '')),
      G.el('tr', { 'data-writeback': 'limit' }, G.el('th', {}, 'Limit'),
        G.el('td', { 'data-value': wb.limitBytes }, limit ? G.bytes(wb.limitBytes) + ' (past it, writes get 503 SlowDown)' : 'none')),
      G.el('tr', { 'data-writeback': 'uploads' }, G.el('th', {}, 'Uploads since start'),
        G.el('td', { class: wb.failedUploads ? 'unhealthy' : '', 'data-value': wb.failedUploads },
          wb.uploads + ' done, ' + wb.failedUploads + ' failed (and retried)')),
    ]);
  };

  // flush asks the node to upload everything under the bucket and prefix
  // now, and tells how it ended (the answer's last line).
  async function flush(ev) {
    ev.preventDefault();
    const result = $('flush-result'), err = $('flush-error');
    result.textContent = 'Flushing…';
    err.textContent = '';
    let last = {};
    try {
      const text = await G.call('POST', '/_granary/flush', { bucket: $('flush-bucket').value.trim(), prefix: $('flush-prefix').value });
      const lines = text.trim().split('\n').filter((l) => l);
      last = lines.length ? JSON.parse(lines[lines.length - 1]) : { error: 'the flush ended without a verdict' };
    } catch (e) {
      last = { error: G.errText(e) };
    }
    result.textContent = last.done ? 'Flushed: ' + last.uploaded + ' uploaded, nothing left waiting.' : '';
    err.textContent = last.done ? '' : 'Flush failed: ' + last.error;
    result.dataset.done = !!last.done;
    G.refresh();
  }

  G.panels.push({ signedIn() {}, signedOut() { $('flush-result').textContent = ''; $('flush-error').textContent = ''; } });
  document.addEventListener('DOMContentLoaded', () => $('flush-form').addEventListener('submit', flush));
})();
