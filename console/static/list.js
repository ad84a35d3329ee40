// The objects of one kind in one namespace (or all), as the API's
// server-side Table has them, kept live by a watch.

import { resPath } from './api.js';
import { LiveList } from './live.js';
import { VirtualTable } from './table.js';
import { h } from './util.js';
import { allNamespaces, listHref, objectHref } from './routes.js';

export function listPage(main, ctx, { res, ns, labels, wide }) {
  const r = ctx.disco.find(res);
  if (!r) {
    main.append(h('p', { class: 'error', id: 'list-error' }, `The API serves no resource "${res}".`));
    return {};
  }
  const all = ns === allNamespaces || !r.namespaced;
  const count = h('span', { id: 'list-count', class: 'count' });
  const state = h('span', { id: 'live-state', class: 'live-state' });
  const error = h('p', { id: 'list-error', class: 'error', hidden: true });
  const empty = h('p', { class: 'empty', hidden: true },
    labels ? `No ${r.name} match ${labels}.` : `No ${r.name}${r.namespaced && !all ? ` in namespace ${ns}` : ''}.`);
  const filter = h('input', { id: 'label-filter', type: 'search', value: labels || '', placeholder: 'label selector, e.g. app=web,tier!=db', spellcheck: 'false' });
  const wideBox = h('input', { id: 'list-wide', type: 'checkbox', checked: !!wide });
  const form = h('form', { class: 'filter', on: { submit: (e) => {
    e.preventDefault();
    const href = listHref(r, ns, filter.value.trim());
    ctx.navigate(wideBox.checked ? `${href}${href.includes('?') ? '&' : '?'}wide=1` : href);
  } } }, filter, h('button', { type: 'submit', id: 'label-filter-apply' }, 'Filter'), h('label', { class: 'check' }, wideBox, ' wide'));
  wideBox.addEventListener('change', () => form.requestSubmit());

  const vt = new VirtualTable({ id: 'list-table', wide, namespaceColumn: r.namespaced && all,
    href: (row) => objectHref(r, row.namespace, row.name) });
  const section = h('section', { id: 'list', class: 'page-list', dataset: { resource: r.name, kind: r.kind, namespace: all ? '' : ns, started: performance.now().toFixed(1) } },
    h('div', { class: 'page-head' },
      h('h1', {}, r.kind, h('span', { class: 'sub' }, r.namespaced ? (all ? ' in every namespace' : ` in ${ns}`) : '')),
      count, state, form),
    error, empty, vt.el);
  main.append(section);

  let painted = false;
  let ready;
  const readyP = new Promise((r) => { ready = r; });
  const live = new LiveList(resPath(r, all ? '' : ns), {
    table: true,
    labelSelector: labels,
    onChange: (change, l) => {
      vt.setColumns(l.columns);
      vt.setRows(l.sorted());
      count.textContent = `${l.size} ${l.size === 1 ? r.kind.toLowerCase() : r.name}`;
      section.dataset.count = l.size;
      section.dataset.rv = l.rv;
      section.dataset.applied = l.applied;
      empty.hidden = l.size > 0 || change.partial;
      if (!painted && (l.size > 0 || !change.partial)) {
        painted = true;
        // Draw now and note when the frame holding the rows has painted:
        // the callback of the frame after it runs once it has.
        vt.draw();
        requestAnimationFrame(() => requestAnimationFrame(() => {
          section.dataset.firstPaint = performance.now().toFixed(1);
          ready();
        }));
      }
    },
    onState: (s, err) => {
      state.textContent = s === 'live' ? '● live' : s;
      state.className = `live-state ${s}`;
      section.dataset.state = s;
      if (err) {
        ready();
        error.hidden = false;
        error.textContent = err.message;
      } else if (s === 'live') {
        error.hidden = true;
      }
    },
  }).start();
  return {
    ready: readyP,
    destroy() {
      live.stop();
      vt.destroy();
    },
  };
}
