// Draws the explain subresource's answer: why an object is or is not
// converged. It shows what `homeostat explain` prints: the progress, the
// ownership tree with the way to the root cause highlighted, the causes
// deepest first, where each loop stands, the latest reconciles and the
// root cause with its fix.

import { h, ago, fmtMs, statusClass } from './util.js';
import { objectHref, traceHref } from './routes.js';

const marks = { Healthy: '✓', Progressing: '~', Unhealthy: '✗', Unknown: '?' };

// refHref links an explain Ref to its object's page, when the API serves
// its kind.
export function refHref(ctx, ref, name) {
  const r = ctx.disco.byKind.get(ref.kind);
  return r ? objectHref(r, ref.namespace, name || ref.name) : null;
}

export function renderExplain(ctx, e) {
  const rc = e.rootCause;
  const el = h('div', { id: 'explain', class: `explain health-${e.health}`, dataset: { health: e.health } },
    h('p', { id: 'explain-summary', class: 'summary' }, h('span', { class: `health-badge ${statusClass(e.health)}` }, e.health), ' ', e.summary),
    e.progress?.length ? h('p', { class: 'progress' }, e.progress.map((c) => h('span', { class: 'chip', dataset: { name: c.name } }, `${c.name} ${c.value}`))) : null);
  if (rc) el.append(rootCause(ctx, rc));
  if (e.tree) {
    el.append(h('h3', {}, 'Ownership tree'),
      h('ul', { id: 'explain-tree', class: 'tree' }, treeNode(ctx, e.tree, rc)));
  }
  if (e.causes?.length) {
    el.append(h('h3', {}, 'Causes'), h('ol', { id: 'causes', class: 'causes' }, e.causes.map((c) => cause(ctx, e, c))));
  }
  if (e.loops?.length) el.append(h('h3', {}, 'Loops'), loops(ctx, e.loops));
  if (e.hidden?.length) {
    el.append(h('p', { id: 'explain-hidden', class: 'muted' }, `Left out (you may not read them): ${e.hidden.join(', ')}`));
  }
  return el;
}

function rootCause(ctx, rc) {
  const href = refHref(ctx, rc.object);
  return h('div', { id: 'root-cause', class: 'root-cause', dataset: { kind: rc.object.kind, name: rc.object.name, reason: rc.reason } },
    h('div', { class: 'rc-title' }, h('span', { class: 'rc-label' }, 'Root cause'), ' ',
      href ? h('a', { href }, `${rc.object.kind} ${rc.object.name}`) : `${rc.object.kind} ${rc.object.name}`,
      ': ', h('strong', { id: 'root-cause-reason' }, rc.reason)),
    rc.message ? h('p', { id: 'root-cause-message' }, rc.message) : null,
    rc.fix ? h('p', { id: 'root-cause-fix', class: 'fix' }, h('span', { class: 'rc-label' }, 'Fix'), ' ', rc.fix) : null);
}

// isRootCause: the node the root cause names, at the end of the marked way.
function isRootCause(n, rc) {
  if (!rc || !n.onRootCause || n.kind !== rc.object.kind) return false;
  return n.name === rc.object.name || (n.names || []).includes(rc.object.name);
}

function treeNode(ctx, n, rc) {
  const group = n.count > 1;
  let who;
  if (group) {
    const more = n.count > (n.names || []).length ? ', …' : '';
    who = [`${n.count} ${n.kind}s (`, ...(n.names || []).flatMap((name, i) => {
      const href = refHref(ctx, n, name);
      return [i ? ', ' : '', href ? h('a', { href }, name) : name];
    }), `${more})`];
  } else {
    const href = refHref(ctx, n);
    who = [`${n.kind} `, href ? h('a', { href }, n.name) : n.name];
  }
  const root = isRootCause(n, rc);
  const cls = ['tree-node', `health-${n.health}`];
  if (n.onRootCause) cls.push('on-root-cause');
  if (root) cls.push('is-root-cause');
  const node = h('div', { class: cls.join(' '), dataset: { kind: n.kind, name: n.name, health: n.health, count: n.count || 1, onRootCause: n.onRootCause ? 'true' : 'false' } },
    h('span', { class: `mark ${statusClass(n.health)}`, title: n.health }, marks[n.health] || '?'),
    h('span', { class: 'who' }, who),
    h('span', { class: `status ${statusClass(n.status)}` }, n.status),
    n.reason ? h('span', { class: `reason ${statusClass(n.reason)}` }, n.reason) : null,
    n.message ? h('span', { class: 'message' }, n.message) : null,
    root ? h('span', { class: 'rc-tag' }, 'root cause') : null);
  return h('li', {}, node, n.children?.length ? h('ul', {}, n.children.map((c) => treeNode(ctx, c, rc))) : null);
}

function cause(ctx, e, c) {
  const first = c.names?.[0];
  const href = first ? refHref(ctx, { kind: c.kind, namespace: e.object.namespace }, first) : null;
  const count = c.count > 1 ? `${c.count} ${c.kind.toLowerCase()}s` : `${c.kind} `;
  return h('li', { class: 'cause', dataset: { kind: c.kind, reason: c.reason } },
    h('div', {}, h('strong', { class: statusClass(c.reason) }, c.reason), ' — ', count,
      c.count > 1 ? ` (${(c.names || []).join(', ')}${c.count > (c.names || []).length ? ', …' : ''})` : href ? h('a', { href }, first) : first,
      ': ', c.message),
    c.detail?.length ? h('pre', { class: 'detail' }, c.detail.join('\n')) : null,
    c.fix ? h('p', { class: 'fix' }, h('span', { class: 'rc-label' }, 'Fix'), ' ', c.fix) : null);
}

// loopState says where a loop stands, as the CLI's text does.
function loopState(l) {
  const since = (t) => (t ? ` for ${ago(t)}` : '');
  const until = (t) => (t ? Math.max(0, Date.parse(t) - Date.now()) : 0);
  let s;
  switch (l.state) {
    case 'Queued': s = `queued${since(l.since)}`; break;
    case 'InFlight': s = `in flight${since(l.since)}${l.worker ? ` on ${l.worker}` : ''}`; break;
    case 'BackingOff':
      s = `backing off after attempt ${l.attempt}${l.nextRetry ? `, next in ${fmtMs(until(l.nextRetry))}` : ''}${l.lastError ? `: ${l.lastError.split('\n')[0]}` : ''}`;
      break;
    case 'Requeued': s = `requeued${l.nextRetry ? `, next reconcile in ${fmtMs(until(l.nextRetry))}` : ''}`; break;
    case 'Failed': s = `failed for good, waiting for the object to change: ${(l.lastError || '').split('\n')[0]}`; break;
    case 'Idle':
      s = 'idle';
      if (l.lastReconcile) s += `, last reconcile ${ago(l.lastReconcile.time)} ago: ${l.lastReconcile.outcome} in ${fmtMs(l.lastReconcile.durationMs)}`;
      else if (!l.message) s += ', no reconcile recorded';
      break;
    default: s = String(l.state || '').toLowerCase();
  }
  if (l.message) s += `: ${l.message}`;
  return s;
}

function loops(ctx, list) {
  return h('table', { id: 'loops', class: 'grid' },
    h('thead', {}, h('tr', {}, ['Loop', 'Object', 'State', 'Where it stands', 'Trace'].map((t) => h('th', {}, t)))),
    h('tbody', {}, list.map((l) => {
      const href = refHref(ctx, l.object);
      return h('tr', { dataset: { controller: l.controller, state: l.state } },
        h('td', {}, l.controller),
        h('td', {}, `${l.object.kind} `, href ? h('a', { href }, l.object.name) : l.object.name),
        h('td', { class: statusClass(l.state) }, l.state),
        h('td', { class: 'wrap' }, loopState(l)),
        h('td', {}, l.traceID ? h('a', { href: traceHref(l.traceID), class: 'mono' }, l.traceID.slice(0, 8)) : ''));
    })));
}

// historyDetail says what a reconcile did, as the CLI's text does.
export function historyDetail(e) {
  const parts = [];
  if (e.error) parts.push(e.error.split('\n')[0]);
  for (const c of e.changes || []) {
    const names = (c.keys || []).map((k) => k.slice(k.lastIndexOf('.') + 1));
    parts.push(`${c.verb} ${c.count} ${c.resource} (${names.join(', ')}${c.count > names.length ? ', …' : ''})`);
  }
  if (e.requeueAfter) parts.push(`again in ${e.requeueAfter}`);
  if (e.outcome === 'in progress') parts.push('still running 1s after it began');
  return parts.join('; ');
}

const outcomeClass = { unchanged: 'good', changed: 'good', requeue: 'warn', 'in progress': 'warn', error: 'bad', terminal: 'bad' };

// renderHistory is a table of reconciles, newest first.
export function renderHistory(items) {
  if (!items.length) return h('p', { class: 'muted' }, 'No reconcile recorded.');
  return h('table', { id: 'history-table', class: 'grid' },
    h('thead', {}, h('tr', {}, ['When', 'Controller', 'Outcome', 'What it did', 'Revision', 'Attempt', 'Took', 'Trace'].map((t) => h('th', {}, t)))),
    h('tbody', {}, [...items].reverse().map((e) => h('tr', { class: 'history-entry', dataset: { outcome: e.outcome, controller: e.controller } },
      h('td', { title: e.time }, `${ago(e.time)} ago`),
      h('td', { title: e.worker || '' }, e.controller),
      h('td', { class: outcomeClass[e.outcome] || '' }, e.outcome),
      h('td', { class: 'wrap' }, historyDetail(e)),
      h('td', {}, e.revision || ''),
      h('td', {}, e.attempt),
      h('td', {}, fmtMs(e.durationMs)),
      h('td', {}, e.traceID ? h('a', { href: traceHref(e.traceID), class: 'mono' }, e.traceID.slice(0, 8)) : '')))));
}
