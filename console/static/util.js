// Small helpers shared by the console's pages: building elements, times,
// and Kubernetes quantities.

// h builds an element. attrs may hold class, dataset (an object), on
// (event handlers), and any attribute or property; children may be strings,
// nodes, arrays, null or false.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// clear empties an element and returns it.
export function clear(el) {
  el.replaceChildren();
  return el;
}

// shortDuration renders milliseconds as kubectl renders an age.
export function shortDuration(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 0) return '0s';
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

// ago is how long before now a time was, as an age.
export function ago(time) {
  if (!time) return '';
  return shortDuration(Date.now() - Date.parse(time));
}

// fmtMs renders a span's length with a unit that suits it.
export function fmtMs(ms) {
  if (ms < 1) return `${Math.round(ms * 1000)}µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : Math.round(ms)}ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)}s`;
}

const suffixes = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

// quantity parses a Kubernetes quantity ("500m", "1Gi", "2e3") into a
// number; NaN when it does not parse.
export function quantity(q) {
  if (q === undefined || q === null || q === '') return NaN;
  if (typeof q === 'number') return q;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m || !(m[2] in suffixes)) return NaN;
  return parseFloat(m[1]) * suffixes[m[2]];
}

// fmtCPU and fmtBytes render amounts for people.
export function fmtCPU(cores) {
  if (!isFinite(cores)) return '–';
  if (cores < 1 && cores > 0) return `${Math.round(cores * 1000)}m`;
  return `${+cores.toFixed(2)}`;
}

export function fmtBytes(b) {
  if (!isFinite(b)) return '–';
  const units = ['B', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi'];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return `${+b.toFixed(b < 10 && i > 0 ? 1 : 0)}${units[i]}`;
}

// statusClass names the look of a status word: good, warn or bad.
export function statusClass(s) {
  s = String(s ?? '');
  if (/^(Running|Ready|Healthy|True|Complete|Completed|Succeeded|Active|Bound|Normal|Established)$/.test(s)) return 'good';
  if (/^(Pending|Progressing|Terminating|ContainerCreating|Unknown|Waiting|Queued|InFlight|Requeued)$/.test(s)) return 'warn';
  if (/Err|Fail|BackOff|Crash|NotReady|Unhealthy|Unschedulable|Evicted|OOM|Signal|ExitCode|Warning|Invalid|False/.test(s)) return 'bad';
  const frac = /^(\d+)\/(\d+)$/.exec(s);
  if (frac) return frac[1] === frac[2] ? 'good' : 'warn';
  return '';
}

// yaml renders JSON as YAML for reading (not for round-trips).
export function yaml(v, indent = '') {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return v.map((x) => {
      const inner = yaml(x, indent + '  ');
      return `\n${indent}- ${inner.replace(/^\n\s*/, '')}`;
    }).join('');
  }
  if (typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0) return '{}';
    return keys.map((k) => {
      const x = v[k];
      const inner = yaml(x, indent + '  ');
      const sep = (x && typeof x === 'object' && Object.keys(x).length) ? '' : ' ';
      return `\n${indent}${k}:${sep}${inner}`;
    }).join('');
  }
  if (typeof v === 'string') {
    if (v.includes('\n')) return `|\n${v.split('\n').map((l) => indent + '  ' + l).join('\n')}`;
    return /^[\w./:@-][\w ./:@,=-]*$/.test(v) && !/^(true|false|null|[\d.]+)$/.test(v) ? v : JSON.stringify(v);
  }
  return String(v);
}

// debounce runs fn once the calls stop for wait ms, or at the latest
// 2 × wait after the first, so a burst of changes costs one refresh. wait
// may be a function, read at each call.
export function debounce(fn, wait) {
  let timer = null;
  let first = 0;
  const run = () => { timer = null; first = 0; fn(); };
  const call = () => {
    const now = Date.now();
    const w = typeof wait === 'function' ? wait() : wait;
    if (!first) first = now;
    clearTimeout(timer);
    timer = setTimeout(run, Math.max(0, Math.min(w, first + w * 2 - now)));
  };
  call.cancel = () => { clearTimeout(timer); timer = null; first = 0; };
  return call;
}
