// A trace drawn as a waterfall: each span a bar on one time axis, nested
// under the span that caused it, so one apply reads from the API request
// through the controllers' reconciles to the bind and the process start.

import { get } from './api.js';
import { h, clear, fmtMs } from './util.js';
import { traceHref } from './routes.js';

// spanTime reads an RFC 3339 time to the microsecond (Date.parse stops at
// the millisecond, and most spans here are shorter than one).
export function spanTime(s) {
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(s || '');
  if (!m) return Date.parse(s);
  return Date.parse(m[1] + m[3]) + (m[2] ? parseFloat(`0${m[2]}`) * 1000 : 0);
}

// spanKind sorts spans into the steps of a reconcile chain.
function spanKind(s) {
  if (/^(GET|POST|PUT|PATCH|DELETE|HEAD) /.test(s.name)) return 'api';
  if (s.name.startsWith('reconcile')) return 'reconcile';
  if (s.name === 'bind' || s.name.startsWith('schedule')) return 'bind';
  if (s.name.startsWith('start')) return 'start';
  return 'other';
}

const detailKeys = ['key', 'pod', 'node', 'result', 'attempt', 'http.response.status_code'];

// order walks the spans as a tree, each level by start time; a span whose
// parent was not recorded is a root.
export function order(spans) {
  const ids = new Set(spans.map((s) => s.spanID));
  const kids = new Map();
  const roots = [];
  for (const s of spans) {
    if (s.parentID && ids.has(s.parentID)) {
      if (!kids.has(s.parentID)) kids.set(s.parentID, []);
      kids.get(s.parentID).push(s);
    } else {
      roots.push(s);
    }
  }
  const byStart = (a, b) => a.t0 - b.t0;
  const out = [];
  const walk = (s, depth) => {
    out.push({ span: s, depth });
    for (const k of (kids.get(s.spanID) || []).sort(byStart)) walk(k, depth + 1);
  };
  for (const r of roots.sort(byStart)) walk(r, 0);
  return out;
}

export function tracePage(main, ctx, { id }) {
  const input = h('input', { id: 'trace-id', type: 'search', value: id, placeholder: '32 hex digits', spellcheck: 'false', size: '36' });
  const form = h('form', { class: 'filter', on: { submit: (e) => {
    e.preventDefault();
    ctx.navigate(traceHref(input.value.trim().toLowerCase()));
  } } }, input, h('button', { type: 'submit' }, 'Show'));
  const body = h('div', { class: 'section-body' });
  const page = h('section', { id: 'trace', class: 'page-trace', dataset: { traceId: id } },
    h('div', { class: 'page-head' }, h('h1', {}, 'Trace'), form), body);
  main.append(page);
  if (!id) {
    body.append(h('p', { class: 'muted' }, 'Every write, reconcile, bind and pod start is a span, and one apply is one trace. ' +
      'Object pages link the trace of their latest write and of each reconcile; spans are kept an hour.'));
    return {};
  }
  let live = true;
  body.append(h('p', { class: 'muted' }, 'Reading the spans…'));
  get(`/apis/homeostat.io/v1/traces/${encodeURIComponent(id)}`).then((tr) => {
    if (live) clear(body).append(...waterfall(tr.spans || [], page));
  }, (e) => {
    if (live) clear(body).append(h('p', { class: 'error', id: 'trace-error' }, e.message));
  });
  return { destroy() { live = false; } };
}

// timeScale maps times to a fraction of the axis. Idle stretches much
// longer than the work around them (a pod started again by its agent an
// hour later, under the same trace) are drawn narrow and marked, so that
// they do not squeeze the rest of the chain into a sliver.
export function timeScale(spans) {
  const iv = spans.map((s) => [s.t0, s.t1]).sort((a, b) => a[0] - b[0]);
  const busy = [];
  for (const [a, b] of iv) {
    const last = busy[busy.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else busy.push([a, b]);
  }
  const busyLen = busy.reduce((n, [a, b]) => n + (b - a), 0) || 0.001;
  const limit = Math.max(500, busyLen);
  const segs = []; // {t0, t1, v0, v1, gap}
  let v = 0;
  busy.forEach(([a, b], i) => {
    if (i > 0) {
      const prev = busy[i - 1][1];
      const len = a - prev;
      const w = len > limit ? busyLen * 0.06 : len;
      segs.push({ t0: prev, t1: a, v0: v, v1: v + w, gap: len > limit });
      v += w;
    }
    segs.push({ t0: a, t1: b, v0: v, v1: v + (b - a) });
    v += b - a;
  });
  const total = Math.max(v, 0.001);
  const origin = busy.length ? busy[0][0] : 0;
  const x = (t) => {
    for (const sg of segs) {
      if (t <= sg.t1) return (sg.v0 + (sg.t1 > sg.t0 ? (Math.max(t, sg.t0) - sg.t0) / (sg.t1 - sg.t0) : 0) * (sg.v1 - sg.v0)) / total;
    }
    return 1;
  };
  const t = (f) => {
    const vv = f * total;
    for (const sg of segs) {
      if (vv <= sg.v1) return sg.t0 + (sg.v1 > sg.v0 ? (vv - sg.v0) / (sg.v1 - sg.v0) : 0) * (sg.t1 - sg.t0);
    }
    return busy.length ? busy[busy.length - 1][1] : 0;
  };
  return { x, t, origin, end: busy.length ? busy[busy.length - 1][1] : 0, gaps: segs.filter((sg) => sg.gap) };
}

function waterfall(spans, page) {
  for (const s of spans) {
    s.t0 = spanTime(s.start);
    s.t1 = Math.max(s.t0, spanTime(s.end));
  }
  const scale = timeScale(spans);
  const origin = scale.origin;
  const total = scale.end - origin;
  const rows = order(spans);
  const detail = h('div', { id: 'span-detail', class: 'span-detail' }, h('p', { class: 'muted' }, 'Choose a span to see its attributes.'));
  const pct = (f) => `${(100 * f).toFixed(3)}%`;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const t = h('span', { class: 'wf-tick' }, f === 0 ? '0' : `+${fmtMs(scale.t(f) - origin)}`);
    t.style.left = pct(f);
    return t;
  });
  // A compressed idle stretch: a hatched band across every row.
  const bands = () => scale.gaps.map((g) => {
    const b = h('div', { class: 'wf-gap', title: `${fmtMs(g.t1 - g.t0)} with no span` });
    b.style.left = pct(scale.x(g.t0));
    b.style.width = pct(scale.x(g.t1) - scale.x(g.t0));
    return b;
  });
  // Labels of gaps too close to the last one labelled would overlap it.
  let lastLabel = -1;
  const gapLabels = scale.gaps.map((g) => {
    const at = (scale.x(g.t0) + scale.x(g.t1)) / 2;
    if (at - lastLabel < 0.12 || at < 0.08 || at > 0.92) return null;
    lastLabel = at;
    const l = h('span', { class: 'wf-gap-label' }, `⋯ ${fmtMs(g.t1 - g.t0)} idle ⋯`);
    l.style.left = pct(at);
    return l;
  });
  const counts = {};
  for (const s of spans) counts[spanKind(s)] = (counts[spanKind(s)] || 0) + 1;
  let selected = null;
  const list = rows.map(({ span: s, depth }) => {
    const kind = spanKind(s);
    const info = detailKeys.filter((k) => s.attributes?.[k]).map((k) => `${k.replace('http.response.status_code', 'status')}=${s.attributes[k]}`).join(' ');
    const label = h('div', { class: 'wf-label', title: `${s.name} ${info}` },
      h('span', { class: 'wf-name' }, s.name), ' ', h('span', { class: 'wf-info' }, info));
    label.style.paddingLeft = `${0.4 + depth * 1.1}rem`;
    const bar = h('div', { class: `span-bar kind-${kind}${s.error ? ' error' : ''}` });
    bar.style.left = pct(scale.x(s.t0));
    bar.style.width = `max(2px, ${pct(scale.x(s.t1) - scale.x(s.t0))})`;
    const time = h('span', { class: 'wf-time' }, `+${fmtMs(s.t0 - origin)} · ${fmtMs(s.t1 - s.t0)}`);
    // The time sits after the bar unless the bar reaches the far end.
    if (scale.x(s.t1) < 0.7) time.style.left = `calc(${pct(scale.x(s.t1))} + 6px)`;
    else time.style.right = `calc(${pct(1 - scale.x(s.t0))} + 6px)`;
    const row = h('div', { class: `span-row${s.error ? ' error' : ''}`, tabindex: '0', role: 'row',
      dataset: { name: s.name, kind, spanId: s.spanID, depth, service: s.service } },
    label, h('div', { class: 'wf-track' }, bands(), bar, time));
    const choose = () => {
      selected?.classList.remove('selected');
      selected = row;
      row.classList.add('selected');
      clear(detail).append(spanDetail(s, origin));
    };
    row.addEventListener('click', choose);
    row.addEventListener('keydown', (e) => { if (e.key === 'Enter') choose(); });
    return row;
  });
  page.dataset.spans = spans.length;
  const legend = h('p', { class: 'legend' }, ['api', 'reconcile', 'bind', 'start', 'other'].filter((k) => counts[k]).map((k) =>
    h('span', { class: 'legend-item' }, h('span', { class: `swatch kind-${k}` }), `${{ api: 'API request', reconcile: 'reconcile', bind: 'bind', start: 'process start', other: 'other' }[k]} (${counts[k]})`)));
  return [
    h('p', { id: 'trace-summary', class: 'summary' }, `${spans.length} spans over ${fmtMs(total)}, from ${new Date(origin).toISOString()}`),
    legend,
    h('div', { id: 'waterfall', class: 'waterfall', role: 'table' },
      h('div', { class: 'span-row wf-axis' }, h('div', { class: 'wf-label' }, 'span'), h('div', { class: 'wf-track' }, bands(), ticks, gapLabels)),
      list),
    detail,
  ];
}

function spanDetail(s, origin) {
  const attrs = Object.entries(s.attributes || {}).sort(([a], [b]) => a.localeCompare(b));
  return h('div', {},
    h('h2', { class: 'mono' }, s.name),
    h('table', { class: 'grid kv' }, h('tbody', {},
      [['service', s.service], ['span', s.spanID], ['parent', s.parentID || '(root)'],
        ['start', `+${fmtMs(s.t0 - origin)} (${s.start})`], ['duration', fmtMs(s.t1 - s.t0)],
        s.error ? ['error', s.error] : null, ...attrs].filter(Boolean).map(([k, v]) =>
        h('tr', {}, h('th', {}, k), h('td', { class: k === 'error' ? 'bad wrap' : 'wrap' }, String(v)))))));
}
