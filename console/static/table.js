// VirtualTable draws a long list of rows by rendering only those in view
// (and a few around them): 10,000 pods cost the DOM of a screenful.

import { h, clear, ago, statusClass } from './util.js';

const overscan = 8;

export class VirtualTable {
  // opts: id, rowHeight, href(row) for the link of a row, wide (show
  // every column, not only priority 0).
  constructor(opts = {}) {
    this.opts = opts;
    this.rowHeight = opts.rowHeight || 28;
    this.rows = [];
    this.defs = [];
    this.cols = [];
    this.head = h('div', { class: 'vt-head', role: 'row' });
    this.spacer = h('div', { class: 'vt-spacer' });
    this.layer = h('div', { class: 'vt-rows' });
    this.body = h('div', { class: 'vt-body', tabindex: '0' }, this.spacer, this.layer);
    this.el = h('div', { class: 'vtable', id: opts.id, role: 'table' }, this.head, this.body);
    this.pool = [];
    this.drawScheduled = false;
    this.body.addEventListener('scroll', () => this.schedule(), { passive: true });
    // Ages grow while nothing changes: redraw what is in view now and then.
    this.ageTimer = setInterval(() => this.draw(), 5000);
  }

  destroy() {
    clearInterval(this.ageTimer);
  }

  // setColumns takes a Table's columnDefinitions.
  setColumns(defs) {
    if (!defs || JSON.stringify(defs) === JSON.stringify(this.defs)) return;
    this.defs = defs;
    this.cols = defs.map((d, i) => ({ ...d, index: i })).filter((d) => this.opts.wide || !d.priority);
    // A list across namespaces says where each row is, as kubectl -A does.
    if (this.opts.namespaceColumn) this.cols.unshift({ name: 'Namespace', index: -1, description: 'the namespace of the object' });
    this.sized = false;
    this.size();
    clear(this.head).append(...this.cols.map((c) => h('div', { class: 'vt-cell', role: 'columnheader', title: c.description || '' }, c.name)));
    for (const row of this.pool) row.remove();
    this.pool = [];
    this.schedule();
  }

  // size gives each column a width after what it holds: the header and
  // the first rows, once there are rows.
  size() {
    const sample = this.rows.slice(0, 200);
    const tracks = this.cols.map((c) => {
      let n = c.name.length + 2;
      for (const r of sample) n = Math.max(n, String((c.index < 0 ? r.namespace : r.cells[c.index]) ?? '').length);
      if (c.format === 'name') n = Math.max(n, 16);
      n = Math.min(n, 80);
      // In rem, not ch: the header's font is smaller than the rows'.
      return `minmax(${((Math.min(n, 28) + 2) * 0.55).toFixed(2)}rem, ${n}fr)`;
    });
    this.el.style.setProperty('--vt-cols', tracks.join(' '));
    this.sized = sample.length > 0;
  }

  setRows(rows) {
    this.rows = rows;
    if (!this.sized) this.size();
    this.spacer.style.height = `${rows.length * this.rowHeight}px`;
    this.schedule();
  }

  schedule() {
    if (this.drawScheduled) return;
    this.drawScheduled = true;
    requestAnimationFrame(() => {
      this.drawScheduled = false;
      this.draw();
    });
  }

  // draw renders the rows in view now, synchronously.
  draw() {
    const top = this.body.scrollTop;
    const height = this.body.clientHeight || window.innerHeight;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - overscan);
    const last = Math.min(this.rows.length, Math.ceil((top + height) / this.rowHeight) + overscan);
    const n = Math.max(0, last - first);
    while (this.pool.length < n) {
      const cells = this.cols.map((c) => h('span', { class: 'vt-cell', dataset: { col: c.name } }));
      const row = h('a', { class: 'vt-row', role: 'row' }, cells);
      row.cells = cells;
      this.pool.push(row);
      this.layer.append(row);
    }
    this.layer.style.transform = `translateY(${first * this.rowHeight}px)`;
    for (let i = 0; i < this.pool.length; i++) {
      const el = this.pool[i];
      if (i >= n) {
        el.hidden = true;
        continue;
      }
      el.hidden = false;
      this.fill(el, this.rows[first + i]);
    }
    this.el.dataset.first = first;
    this.el.dataset.rendered = n;
  }

  fill(el, row) {
    if (el.row === row && !this.ageColumn()) return;
    el.row = row;
    el.dataset.key = row.key;
    el.dataset.name = row.name;
    el.dataset.namespace = row.namespace;
    el.href = this.opts.href ? this.opts.href(row) : '#';
    this.cols.forEach((c, i) => {
      let v = c.index < 0 ? row.namespace : row.cells[c.index];
      if (c.name === 'Age' && row.meta?.creationTimestamp) v = ago(row.meta.creationTimestamp);
      const text = v === null || v === undefined ? '' : String(v);
      const cell = el.cells[i];
      if (cell.textContent !== text) cell.textContent = text;
      const cls = c.name === 'Status' || c.name === 'Ready' || c.name === 'Type' || c.name === 'Reason' ? statusClass(text) : '';
      const want = cls ? `vt-cell ${cls}` : 'vt-cell';
      if (cell.className !== want) cell.className = want;
    });
  }

  ageColumn() {
    return this.cols.some((c) => c.name === 'Age');
  }
}
