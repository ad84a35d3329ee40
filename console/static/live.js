// LiveList keeps a collection current from one list and one watch: no
// polling. Watch events are applied in batches, at most once per animation
// frame, so a burst of changes costs one render. A 410 Gone, an ERROR
// event or a dropped stream lists again.

import { fetchOK, get, readLines, TABLE } from './api.js';

// The first page is small so that the first screen paints before a large
// collection has arrived; the rest comes in one more request.
const firstPage = 200;

export class LiveList {
  // path is the collection's path; opts: table (ask for server-side
  // Tables), labelSelector, fieldSelector, onChange({membership, reset}),
  // onState(state, error).
  constructor(path, opts = {}) {
    this.path = path;
    this.opts = opts;
    this.rows = new Map();
    this.columns = null;
    this.rv = '';
    this.applied = 0; // watch events applied, for whoever measures
    this.gen = 0;
    this.pending = [];
    this.flushScheduled = false;
    this.failures = 0;
    this.order = null;
  }

  start() {
    this.run(++this.gen);
    return this;
  }

  stop() {
    this.gen++;
    this.ctrl?.abort();
    clearTimeout(this.retryTimer);
  }

  get size() {
    return this.rows.size;
  }

  // sorted is the rows in key order (namespace/name), as the API lists them.
  sorted() {
    if (!this.order) {
      this.order = [...this.rows.values()];
      this.order.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    }
    return this.order;
  }

  query(extra) {
    const q = new URLSearchParams(extra);
    if (this.opts.labelSelector) q.set('labelSelector', this.opts.labelSelector);
    if (this.opts.fieldSelector) q.set('fieldSelector', this.opts.fieldSelector);
    return `${this.path}?${q}`;
  }

  get accept() {
    return this.opts.table ? TABLE : 'application/json';
  }

  // rowsOf turns a list or watch object into rows.
  rowsOf(obj) {
    if (this.opts.table) {
      if (obj.columnDefinitions?.length) this.columns = obj.columnDefinitions;
      return (obj.rows || []).map((r) => {
        const meta = r.object?.metadata || {};
        const name = meta.name ?? r.cells[0];
        const ns = meta.namespace || '';
        return { key: `${ns}/${name}`, name, namespace: ns, cells: r.cells, meta };
      });
    }
    const list = obj.items || [obj];
    return list.map((o) => {
      const meta = o.metadata || {};
      return { key: `${meta.namespace || ''}/${meta.name}`, name: meta.name, namespace: meta.namespace || '', obj: o, meta };
    });
  }

  async run(gen) {
    this.state('loading');
    try {
      const first = await get(this.query({ limit: firstPage }), { accept: this.accept });
      if (gen !== this.gen) return;
      const fresh = new Map();
      for (const r of this.rowsOf(first)) fresh.set(r.key, r);
      this.rv = first.metadata?.resourceVersion || '';
      let cont = first.metadata?.continue;
      if (cont && this.rows.size === 0) this.replace(fresh, true);
      while (cont) {
        const more = await get(this.query({ continue: cont }), { accept: this.accept });
        if (gen !== this.gen) return;
        for (const r of this.rowsOf(more)) fresh.set(r.key, r);
        cont = more.metadata?.continue;
      }
      this.replace(fresh, false);
    } catch (e) {
      if (gen !== this.gen || e.name === 'AbortError') return;
      this.state('error', e);
      // A refusal (403, 404, 400) will not change by asking again.
      if (e.code >= 400 && e.code < 500 && e.code !== 429) return;
      this.retry(gen);
      return;
    }
    this.watch(gen);
  }

  replace(fresh, partial) {
    this.rows = fresh;
    this.order = null;
    this.emit({ membership: true, reset: true, partial });
  }

  async watch(gen) {
    const ctrl = new AbortController();
    this.ctrl = ctrl;
    this.gone = false;
    const started = Date.now();
    try {
      const resp = await fetchOK('GET', this.query({ watch: '1', resourceVersion: this.rv, allowWatchBookmarks: 'true' }),
        { accept: this.accept, signal: ctrl.signal });
      if (gen !== this.gen) return;
      this.state('live');
      await readLines(resp, (line) => {
        if (gen !== this.gen) return;
        let ev;
        try { ev = JSON.parse(line); } catch { return; }
        if (ev.type === 'ERROR') {
          // Gone, or the store failed: what we hold may be stale.
          this.gone = true;
          ctrl.abort();
          return;
        }
        this.queue(ev);
      });
    } catch (e) {
      if (gen !== this.gen) return;
      if (e.name !== 'AbortError' && e.code !== 410) this.state('error', e);
      if (e.code >= 400 && e.code < 500 && e.code !== 410 && e.code !== 429) return;
    }
    if (gen !== this.gen) return;
    if (Date.now() - started > 5000 || this.gone) this.failures = 0;
    this.retry(gen);
  }

  // retry lists again, at once the first time, then after a pause that
  // doubles while the API keeps failing, so an API that is down is not
  // asked in a tight loop.
  retry(gen) {
    this.state('reconnecting');
    const delay = this.failures === 0 ? 0 : Math.min(30000, 500 * 2 ** (this.failures - 1));
    this.failures++;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => { if (gen === this.gen) this.run(gen); }, delay);
  }

  queue(ev) {
    this.pending.push(ev);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // A frame, or half a second when frames do not come (a hidden tab).
    const flush = () => {
      if (!this.flushScheduled) return;
      this.flushScheduled = false;
      cancelAnimationFrame(raf);
      clearTimeout(timer);
      this.flush();
    };
    const raf = requestAnimationFrame(flush);
    const timer = setTimeout(flush, 500);
  }

  flush() {
    const evs = this.pending;
    this.pending = [];
    let membership = false;
    let changed = 0;
    for (const ev of evs) {
      if (ev.type === 'BOOKMARK') {
        this.rv = ev.object?.metadata?.resourceVersion || this.rv;
        continue;
      }
      for (const r of this.rowsOf(ev.object)) {
        changed++;
        if (ev.type === 'DELETED') {
          membership = this.rows.delete(r.key) || membership;
        } else {
          if (!this.rows.has(r.key)) membership = true;
          this.rows.set(r.key, r);
        }
        const rv = r.meta?.resourceVersion;
        if (rv && (+rv > +this.rv || !this.rv)) this.rv = rv;
      }
    }
    this.applied += evs.length;
    // Bookmarks alone change nothing to show.
    if (!changed) return;
    if (membership) this.order = null;
    else if (this.order) {
      // Same members: put the new row objects in place of the old ones.
      for (let i = 0; i < this.order.length; i++) this.order[i] = this.rows.get(this.order[i].key);
    }
    this.emit({ membership, reset: false });
  }

  emit(change) {
    this.opts.onChange?.(change, this);
  }

  state(s, err) {
    this.opts.onState?.(s, err, this);
  }
}

// watchObject keeps one object current: a get, then a watch of its name.
// onObject receives each new state, onGone its deletion.
export function watchObject(path, name, { onObject, onGone, onState }) {
  const coll = path.slice(0, path.lastIndexOf('/'));
  const live = new LiveList(coll, {
    fieldSelector: `metadata.name=${name}`,
    onState,
    onChange: () => {
      const row = [...live.rows.values()][0];
      if (row) onObject(row.obj);
      else onGone();
    },
  });
  return live.start();
}
