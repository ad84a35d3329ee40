// One object's page: its state kept live by a watch, why it is or is not
// converged (the explain subresource), its pods, conditions, events and
// reconcile history, its spec and status, and the writes the identity may
// make (scale, rollout restart, delete), each checked again by the API.

import { canI, get, request, resPath } from './api.js';
import { LiveList, watchObject } from './live.js';
import { VirtualTable } from './table.js';
import { h, clear, ago, yaml, debounce, statusClass } from './util.js';
import { listHref, logsHref, objectHref, traceHref } from './routes.js';
import { renderExplain, renderHistory } from './explain.js';

const workloads = new Set(['Deployment', 'ReplicaSet', 'DaemonSet', 'Job']);

function section(id, title, ...extra) {
  const body = h('div', { class: 'section-body' });
  const el = h('section', { id, class: 'panel' }, h('h2', {}, title, ...extra), body);
  return { el, body };
}

// selectorText renders a label selector as the labelSelector parameter
// takes it.
export function selectorText(sel) {
  if (!sel) return '';
  const parts = Object.entries(sel.matchLabels || {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions || []) {
    const vals = (e.values || []).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${vals})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${vals})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.join(',');
}

export function objectPage(main, ctx, { group, version, res, ns, name }) {
  const r = ctx.disco.of(group, version, res);
  if (!r) {
    main.append(h('p', { class: 'error' }, `The API serves no resource ${res} in ${group}/${version}.`));
    return {};
  }
  const path = resPath(r, ns, name);
  const stops = [];
  let destroyed = false;
  let obj = null;

  const health = h('span', { id: 'health', class: 'health-badge' });
  const actions = h('div', { id: 'actions', class: 'actions' });
  const message = h('p', { id: 'action-msg', class: 'action-msg', hidden: true });
  const banner = h('p', { id: 'object-banner', class: 'banner', hidden: true });
  const summary = h('dl', { id: 'summary', class: 'summary-grid' });
  const why = section('why', 'Why');
  const pods = section('pods', 'Pods');
  const conditions = section('conditions', 'Conditions');
  const containers = section('containers', 'Containers');
  const events = section('events', 'Events');
  const history = section('history', 'Reconcile history');
  const latest = h('p', { id: 'reconcile-state', class: 'muted' });
  history.body.before(latest);
  const spec = section('spec', 'Spec');
  const status = section('status', 'Status');
  const metadata = section('metadata', 'Metadata');
  pods.el.hidden = !workloads.has(r.kind);
  containers.el.hidden = r.kind !== 'Pod';
  const page = h('section', { id: 'object', class: 'page-object', dataset: { kind: r.kind, name, namespace: ns, resource: r.name } },
    h('div', { class: 'page-head' },
      h('h1', {}, h('a', { href: listHref(r, ns), class: 'kind' }, r.kind), ' ', h('span', { class: 'name' }, name),
        ns ? h('span', { class: 'sub' }, ` in ${ns}`) : null),
      health, actions),
    message, banner, summary, why.el, pods.el, containers.el, conditions.el, events.el, history.el, spec.el, status.el, metadata.el);
  main.append(page);
  why.body.append(h('p', { class: 'muted' }, 'Asking the API…'));

  // Explain, history and the reconcile state are read again when the
  // object, its pods or its events change: 600ms after the changes stop,
  // and less often when an answer is slow to make (a Deployment of
  // thousands of pods), so that an open page costs the API little.
  let inFlight = false;
  let again = false;
  let took = 0;
  async function refresh() {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    const started = performance.now();
    const [ex, hist, rec] = await Promise.allSettled([get(`${path}/explain`), get(`${path}/history?limit=30`), get(`${path}/reconcile`)]);
    took = performance.now() - started;
    inFlight = false;
    if (destroyed) return;
    if (ex.status === 'fulfilled') {
      clear(why.body).append(renderExplain(ctx, ex.value));
      health.textContent = ex.value.health;
      health.className = `health-badge ${statusClass(ex.value.health)}`;
      page.dataset.health = ex.value.health;
    } else {
      clear(why.body).append(h('p', { class: 'error' }, ex.reason.message));
    }
    if (hist.status === 'fulfilled') clear(history.body).append(renderHistory(hist.value.items || []));
    else clear(history.body).append(h('p', { class: 'error' }, hist.reason.message));
    if (rec.status === 'fulfilled') renderReconcile(rec.value);
    page.dataset.explained = String(Date.now());
    if (again) {
      again = false;
      soon();
    }
  }
  const soon = debounce(refresh, () => Math.max(600, 5 * took));

  function renderReconcile(st) {
    clear(latest);
    if (st.traceID) latest.append('Latest write: ', h('a', { id: 'latest-trace', href: traceHref(st.traceID) }, `trace ${st.traceID}`), '. ');
    for (const [c, raw] of Object.entries(st.retries || {})) {
      const tr = raw.traceID ? [' (', h('a', { href: traceHref(raw.traceID) }, 'trace'), ')'] : [];
      latest.append(h('span', { class: 'bad retry' }, `${c} is retrying after ${raw.attempts} attempts: ${String(raw.lastError || '').split('\n')[0]}`, ...tr, '. '));
    }
  }

  let first = true;
  function render(o) {
    obj = o;
    banner.hidden = !o.metadata?.deletionTimestamp;
    if (o.metadata?.deletionTimestamp) banner.textContent = `Being deleted since ${ago(o.metadata.deletionTimestamp)} ago${o.metadata.finalizers?.length ? `, waiting for ${o.metadata.finalizers.join(', ')}` : ''}.`;
    renderSummary(o);
    renderConditions(o.status?.conditions || []);
    if (r.kind === 'Pod') renderContainers(o);
    clear(spec.body).append(h('pre', { id: 'spec-yaml', class: 'yaml' }, yaml(o.spec ?? Object.fromEntries(
      Object.entries(o).filter(([k]) => !['apiVersion', 'kind', 'metadata', 'status'].includes(k)))).trim()));
    clear(status.body).append(h('pre', { id: 'status-yaml', class: 'yaml' }, yaml(o.status || {}).trim()));
    const { managedFields, ...meta } = o.metadata || {};
    clear(metadata.body).append(h('pre', { id: 'metadata-yaml', class: 'yaml' }, yaml(meta).trim()),
      managedFields ? h('p', { class: 'muted' }, `Field managers: ${[...new Set(managedFields.map((m) => m.manager))].join(', ')}`) : null);
    page.dataset.rv = o.metadata?.resourceVersion || '';
    if (first) {
      first = false;
      startEvents(o);
      if (workloads.has(r.kind)) startPods(o);
      setupActions(o);
      refresh();
    } else {
      soon();
      syncActions(o);
    }
  }

  function item(label, value, attrs = {}) {
    return [h('dt', {}, label), h('dd', attrs, value)];
  }

  function renderSummary(o) {
    const s = o.status || {};
    const sp = o.spec || {};
    const rows = [];
    if (r.kind === 'Deployment' || r.kind === 'ReplicaSet') {
      const ready = `${s.readyReplicas || 0}/${sp.replicas ?? 1}`;
      rows.push(item('Ready', ready, { id: 'status-ready', class: statusClass(ready), dataset: { ready: s.readyReplicas || 0, desired: sp.replicas ?? 1 } }));
      rows.push(item('Up-to-date', s.updatedReplicas ?? s.fullyLabeledReplicas ?? 0), item('Available', s.availableReplicas || 0));
      if (sp.strategy) rows.push(item('Strategy', sp.strategy.type || 'RollingUpdate'));
      if (sp.paused) rows.push(item('Paused', 'yes', { class: 'warn' }));
    } else if (r.kind === 'DaemonSet') {
      const ready = `${s.numberReady || 0}/${s.desiredNumberScheduled || 0}`;
      rows.push(item('Ready', ready, { id: 'status-ready', class: statusClass(ready) }), item('Up-to-date', s.updatedNumberScheduled || 0), item('Available', s.numberAvailable || 0));
    } else if (r.kind === 'Job') {
      rows.push(item('Completions', `${s.succeeded || 0}/${sp.completions ?? 1}`, { id: 'status-ready' }), item('Active', s.active || 0), item('Failed', s.failed || 0));
    } else if (r.kind === 'Pod') {
      const cs = s.containerStatuses || [];
      const ready = `${cs.filter((c) => c.ready).length}/${(sp.containers || []).length}`;
      const nodeRes = ctx.disco.find('nodes');
      rows.push(item('Phase', s.phase || 'Pending', { id: 'pod-phase', class: statusClass(s.phase || 'Pending') }),
        item('Ready', ready, { id: 'status-ready', class: statusClass(ready) }),
        item('Node', sp.nodeName ? h('a', { href: objectHref(nodeRes, '', sp.nodeName) }, sp.nodeName) : '<none>'),
        item('IP', s.podIP || '<none>'),
        item('Restarts', cs.reduce((n, c) => n + (c.restartCount || 0), 0)));
    }
    if (sp.selector && r.kind !== 'Service') rows.push(item('Selector', selectorText(sp.selector) || '<none>'));
    rows.push(item('Created', o.metadata?.creationTimestamp ? `${ago(o.metadata.creationTimestamp)} ago` : '', { title: o.metadata?.creationTimestamp || '' }));
    const labels = Object.entries(o.metadata?.labels || {});
    if (labels.length) {
      rows.push(item('Labels', labels.map(([k, v]) => h('a', { class: 'chip', href: listHref(r, ns, `${k}=${v}`) }, `${k}=${v}`))));
    }
    const owners = o.metadata?.ownerReferences || [];
    if (owners.length) {
      rows.push(item('Owners', owners.map((ref) => {
        const or = ctx.disco.resources.find((x) => x.kind === ref.kind && (x.group ? `${x.group}/${x.version}` : x.version) === ref.apiVersion) || ctx.disco.byKind.get(ref.kind);
        return or ? h('a', { class: 'chip', href: objectHref(or, ns, ref.name) }, `${ref.kind} ${ref.name}`) : h('span', { class: 'chip' }, `${ref.kind} ${ref.name}`);
      })));
    }
    clear(summary).append(...rows.flat());
  }

  function renderConditions(conds) {
    conditions.el.hidden = !conds.length;
    clear(conditions.body).append(h('table', { id: 'conditions-table', class: 'grid' },
      h('thead', {}, h('tr', {}, ['Type', 'Status', 'Reason', 'Message', 'Last transition'].map((t) => h('th', {}, t)))),
      h('tbody', {}, conds.map((c) => h('tr', { dataset: { type: c.type, status: c.status } },
        h('td', {}, c.type), h('td', { class: statusClass(c.status) }, c.status), h('td', {}, c.reason || ''),
        h('td', { class: 'wrap' }, c.message || ''), h('td', { title: c.lastTransitionTime || '' }, c.lastTransitionTime ? `${ago(c.lastTransitionTime)} ago` : ''))))));
  }

  function renderContainers(o) {
    const statuses = new Map((o.status?.containerStatuses || []).map((c) => [c.name, c]));
    clear(containers.body).append(h('table', { id: 'containers-table', class: 'grid' },
      h('thead', {}, h('tr', {}, ['Name', 'State', 'Ready', 'Restarts', 'PID', 'Command', 'Logs'].map((t) => h('th', {}, t)))),
      h('tbody', {}, (o.spec?.containers || []).map((c) => {
        const st = statuses.get(c.name) || {};
        const [state, detail] = containerState(st.state);
        return h('tr', { dataset: { container: c.name } },
          h('td', {}, c.name), h('td', { class: statusClass(detail || state) }, detail ? `${state}: ${detail}` : state),
          h('td', {}, st.ready ? 'yes' : 'no'), h('td', {}, st.restartCount || 0), h('td', { class: 'mono' }, st.pid || st.state?.running?.pid || ''),
          h('td', { class: 'mono wrap' }, [...(c.command || []), ...(c.args || [])].join(' ')),
          h('td', {}, o.spec?.nodeName ? [h('a', { href: logsHref(ns, name, c.name), class: 'logs-link' }, 'logs'),
            st.restartCount ? [' · ', h('a', { href: `${logsHref(ns, name, c.name)}&previous=1` }, 'previous')] : null] : ''));
      }))));
  }

  function startEvents(o) {
    const uid = o.metadata?.uid;
    if (!uid) return;
    const evRes = ctx.disco.find('events');
    const evPath = ns ? `/api/v1/namespaces/${encodeURIComponent(ns)}/events` : '/api/v1/events';
    const live = new LiveList(evPath, {
      fieldSelector: `involvedObject.uid=${uid}`,
      onChange: (_, l) => {
        const evs = [...l.rows.values()].map((x) => x.obj)
          .sort((a, b) => Date.parse(b.lastTimestamp || b.eventTime || b.metadata.creationTimestamp) - Date.parse(a.lastTimestamp || a.eventTime || a.metadata.creationTimestamp));
        events.el.dataset.count = evs.length;
        clear(events.body).append(evs.length ? h('table', { id: 'events-table', class: 'grid' },
          h('thead', {}, h('tr', {}, ['Type', 'Reason', 'Last seen', 'Count', 'From', 'Message', 'Trace'].map((t) => h('th', {}, t)))),
          h('tbody', {}, evs.slice(0, 100).map((e) => {
            const trace = e.metadata?.annotations?.['homeostat.io/trace-id'];
            return h('tr', { class: 'event', dataset: { type: e.type, reason: e.reason } },
              h('td', { class: e.type === 'Warning' ? 'bad' : '' }, e.type), h('td', {}, e.reason),
              h('td', {}, `${ago(e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp)} ago`), h('td', {}, e.count || 1),
              h('td', {}, e.source?.component || e.reportingComponent || ''), h('td', { class: 'wrap' }, e.message || ''),
              h('td', {}, trace ? h('a', { href: traceHref(trace), class: 'mono' }, trace.slice(0, 8)) : ''));
          }))) : h('p', { class: 'muted' }, 'No events.'));
        soon();
      },
      onState: (s, err) => {
        if (err) clear(events.body).append(h('p', { class: 'error' }, err.message));
      },
    }).start();
    stops.push(() => live.stop());
    if (!evRes) events.el.hidden = true;
  }

  function startPods(o) {
    const podRes = ctx.disco.find('pods');
    const sel = selectorText(o.spec?.selector);
    if (!podRes || !sel) return;
    const count = h('span', { class: 'count', id: 'pods-count' });
    pods.el.querySelector('h2').append(' ', count, ' ', h('a', { class: 'more', href: listHref(podRes, ns, sel) }, 'open as a list'));
    const vt = new VirtualTable({ id: 'pods-table', href: (row) => objectHref(podRes, row.namespace, row.name) });
    vt.el.classList.add('embedded');
    pods.body.append(vt.el);
    const live = new LiveList(resPath(podRes, ns), {
      table: true,
      labelSelector: sel,
      onChange: (_, l) => {
        vt.setColumns(l.columns);
        vt.setRows(l.sorted());
        count.textContent = `(${l.size})`;
        pods.el.dataset.count = l.size;
        soon();
      },
      onState: (s, err) => {
        if (err) clear(pods.body).append(h('p', { class: 'error' }, err.message));
      },
    }).start();
    stops.push(() => {
      live.stop();
      vt.destroy();
    });
  }

  // Writes: only the buttons the identity may use are shown; the API
  // still decides, and a refusal shows its Status message.
  const attrs = (verb, subresource = '') => ({ namespace: ns, verb, group: r.group, resource: r.name, subresource, name });
  let scaleInput = null;
  let scaleVia = '';

  async function setupActions(o) {
    const scalable = r.subresources.has('scale');
    const restartable = r.group === 'apps' && (r.kind === 'Deployment' || r.kind === 'DaemonSet');
    const [scaleSub, patch, del] = await Promise.all([
      scalable ? canI(attrs('patch', 'scale')) : false,
      scalable || restartable ? canI(attrs('patch')) : false,
      canI(attrs('delete')),
    ]);
    if (destroyed) return;
    const buttons = [];
    if (r.kind === 'Pod' && o.spec?.nodeName) {
      buttons.push(h('a', { id: 'act-logs', class: 'button', href: logsHref(ns, name, (o.spec.containers || [])[0]?.name) }, 'Logs'));
    }
    if (scalable && (scaleSub || patch)) {
      // The scale subresource where the identity may use it, else the
      // object itself: either way the same replicas and the API's checks.
      scaleVia = scaleSub ? 'scale' : 'object';
      scaleInput = h('input', { id: 'scale-replicas', type: 'number', min: '0', value: String(o.spec?.replicas ?? 1), 'aria-label': 'replicas' });
      // What the person typed stays until it is sent, whatever the watch says.
      scaleInput.addEventListener('input', () => { scaleInput.dataset.edited = 'true'; });
      buttons.push(h('span', { class: 'scale' }, scaleInput, h('button', { id: 'act-scale', type: 'button', on: { click: scale } }, 'Scale')));
    }
    if (restartable && patch) buttons.push(h('button', { id: 'act-restart', type: 'button', on: { click: restart } }, 'Rollout restart'));
    if (del) {
      const confirm = h('button', { id: 'act-delete-confirm', type: 'button', class: 'danger', hidden: true, on: { click: remove } }, `Delete ${r.kind.toLowerCase()} ${name}`);
      const cancel = h('button', { type: 'button', class: 'quiet', hidden: true, on: { click: () => { confirm.hidden = cancel.hidden = true; } } }, 'Keep it');
      buttons.push(h('button', { id: 'act-delete', type: 'button', class: 'danger-outline', on: { click: () => { confirm.hidden = cancel.hidden = false; confirm.focus(); } } }, 'Delete'), confirm, cancel);
    }
    clear(actions).append(...buttons);
    actions.dataset.checked = 'true';
  }

  function syncActions(o) {
    if (scaleInput && !scaleInput.dataset.edited && document.activeElement !== scaleInput) scaleInput.value = String(o.spec?.replicas ?? 1);
  }

  function say(text, ok, code) {
    message.hidden = false;
    message.textContent = text;
    message.className = `action-msg ${ok ? 'ok' : 'error'}`;
    message.dataset.code = code || '';
  }

  async function act(what, fn) {
    for (const b of actions.querySelectorAll('button')) b.disabled = true;
    try {
      await fn();
      say(what, true, '200');
    } catch (e) {
      say(e.message, false, String(e.code));
    } finally {
      for (const b of actions.querySelectorAll('button')) b.disabled = false;
    }
  }

  function scale() {
    const n = Number(scaleInput.value);
    if (!Number.isInteger(n) || n < 0) return say('Replicas must be a whole number, 0 or more.', false, '');
    return act(`Scaled to ${n}.`, async () => {
      await request('PATCH', scaleVia === 'scale' ? `${path}/scale` : path,
        { body: { spec: { replicas: n } }, contentType: 'application/merge-patch+json' });
      delete scaleInput.dataset.edited;
    });
  }

  function restart() {
    const at = new Date().toISOString();
    return act(`Restart requested at ${at}.`, () => request('PATCH', path, {
      body: { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': at } } } } },
      contentType: 'application/strategic-merge-patch+json',
    }));
  }

  function remove() {
    return act(`Deleted ${r.kind.toLowerCase()} ${name}.`, () => request('DELETE', path));
  }

  const watch = watchObject(path, name, {
    onObject: render,
    onGone: () => {
      if (!obj) {
        clear(why.body).append(h('p', { class: 'error', id: 'object-error' }, `${r.kind} ${name} was not found${ns ? ` in ${ns}` : ''}.`));
        return;
      }
      banner.hidden = false;
      banner.textContent = `${r.kind} ${name} is gone.`;
      page.dataset.gone = 'true';
    },
    onState: (s, err) => {
      page.dataset.state = s;
      if (err && !obj) {
        clear(why.body).append(h('p', { class: 'error', id: 'object-error' }, err.message));
      }
    },
  });
  stops.push(() => watch.stop());

  return {
    destroy() {
      destroyed = true;
      soon.cancel();
      for (const s of stops) s();
    },
  };
}

// containerState names a container state and its detail.
function containerState(st) {
  if (!st) return ['Waiting', ''];
  if (st.running) return ['Running', st.running.startedAt ? `since ${ago(st.running.startedAt)} ago` : ''];
  if (st.waiting) return ['Waiting', [st.waiting.reason, st.waiting.message].filter(Boolean).join(': ')];
  if (st.terminated) {
    const t = st.terminated;
    return ['Terminated', t.reason || (t.signal ? `Signal:${t.signal}` : `ExitCode:${t.exitCode}`)];
  }
  return ['Unknown', ''];
}
