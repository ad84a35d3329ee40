// Nodes: what each has (capacity, allocatable), what is asked of it (the
// requests of the pods bound there), its conditions and taints, and its
// pods, all kept live by watches.

import { resPath } from './api.js';
import { LiveList } from './live.js';
import { h, clear, ago, quantity, fmtCPU, fmtBytes, statusClass } from './util.js';
import { objectHref } from './routes.js';

// Cards on the overview, each with a watch of its node's pods: more would
// cost more watches than a page should hold.
const maxCards = 40;
const podsOnCard = 12;

// podRequests is what a pod asks of its node, as the scheduler counts it:
// the larger of its containers' sum and any one init container.
export function podRequests(p) {
  const sum = { cpu: 0, memory: 0 };
  for (const c of p.spec?.containers || []) {
    sum.cpu += quantity(c.resources?.requests?.cpu) || 0;
    sum.memory += quantity(c.resources?.requests?.memory) || 0;
  }
  for (const c of p.spec?.initContainers || []) {
    sum.cpu = Math.max(sum.cpu, quantity(c.resources?.requests?.cpu) || 0);
    sum.memory = Math.max(sum.memory, quantity(c.resources?.requests?.memory) || 0);
  }
  return sum;
}

// holds: a pod that ended holds nothing on its node.
const holds = (p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';

function bar(resource, used, total, fmt) {
  const frac = total > 0 ? used / total : 0;
  const fill = h('span', { class: `bar-fill ${frac > 1 ? 'bad' : frac > 0.85 ? 'warn' : 'good'}` });
  fill.style.width = `${Math.min(100, frac * 100).toFixed(1)}%`;
  return h('div', { class: 'alloc', dataset: { resource, used: String(used), total: String(total) } },
    h('span', { class: 'alloc-label' }, `${resource}: ${fmt(used)} of ${fmt(total)} (${Math.round(frac * 100)}%)`),
    h('span', { class: 'bar' }, fill));
}

function readyOf(n) {
  const c = (n.status?.conditions || []).find((x) => x.type === 'Ready');
  return c ? c.status : 'Unknown';
}

// conditionGood: Ready should be True, the pressure conditions False.
const conditionGood = (c) => (c.type === 'Ready' ? c.status === 'True' : c.status === 'False');

function nodeCard(ctx, n, pods) {
  const name = n.metadata.name;
  const alloc = n.status?.allocatable || {};
  const cap = n.status?.capacity || {};
  const ready = readyOf(n);
  const held = pods ? pods.filter(holds) : null;
  const used = { cpu: 0, memory: 0 };
  for (const p of held || []) {
    const r = podRequests(p);
    used.cpu += r.cpu;
    used.memory += r.memory;
  }
  const status = ready === 'True' ? 'Ready' : 'NotReady';
  return h('article', { class: 'node-card', dataset: { node: name, ready } },
    h('h2', {}, h('a', { href: `#/nodes/${encodeURIComponent(name)}` }, name), ' ',
      h('span', { class: `health-badge ${statusClass(status)}` }, status),
      n.spec?.unschedulable ? h('span', { class: 'health-badge warn' }, 'SchedulingDisabled') : null),
    h('table', { class: 'grid kv capacity' },
      h('thead', {}, h('tr', {}, h('th', {}, ''), h('th', {}, 'cpu'), h('th', {}, 'memory'), h('th', {}, 'pods'))),
      h('tbody', {},
        h('tr', { dataset: { row: 'capacity' } }, h('th', {}, 'Capacity'), h('td', {}, cap.cpu ?? '–'), h('td', {}, fmtBytes(quantity(cap.memory))), h('td', {}, cap.pods ?? '–')),
        h('tr', { dataset: { row: 'allocatable' } }, h('th', {}, 'Allocatable'), h('td', {}, alloc.cpu ?? '–'), h('td', {}, fmtBytes(quantity(alloc.memory))), h('td', {}, alloc.pods ?? '–')))),
    held ? h('div', { class: 'allocation' },
      bar('cpu', used.cpu, quantity(alloc.cpu), fmtCPU),
      bar('memory', used.memory, quantity(alloc.memory), fmtBytes),
      bar('pods', held.length, quantity(alloc.pods), (x) => (isFinite(x) ? String(x) : '–'))) : h('p', { class: 'muted' }, 'Reading its pods…'),
    h('p', { class: 'conditions' }, (n.status?.conditions || []).map((c) =>
      h('span', { class: `chip ${conditionGood(c) ? 'good' : 'bad'}`, title: c.message || '', dataset: { type: c.type, status: c.status } }, `${c.type}=${c.status}`))),
    (n.spec?.taints || []).length ? h('p', { class: 'taints' }, 'Taints: ', n.spec.taints.map((t) =>
      h('span', { class: 'chip warn' }, `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`))) : null,
    pods ? podList(ctx, name, pods) : null);
}

// podList names the first pods of a node, each linked to its page.
function podList(ctx, node, pods) {
  const podRes = ctx.disco.find('pods');
  const shown = pods.slice(0, podsOnCard);
  return h('div', { class: 'node-pods' },
    h('p', { class: 'muted' }, `${pods.length} pod${pods.length === 1 ? '' : 's'} bound here`),
    h('ul', { class: 'pod-chips' }, shown.map((p) => h('li', {}, h('a', {
      class: `chip ${statusClass(p.status?.phase || 'Pending')}`,
      href: podRes ? objectHref(podRes, p.metadata.namespace, p.metadata.name) : '#',
      title: `${p.metadata.namespace}/${p.metadata.name}: ${p.status?.phase || 'Pending'}`,
      dataset: { pod: p.metadata.name },
    }, p.metadata.name)))),
    pods.length > shown.length ? h('a', { href: `#/nodes/${encodeURIComponent(node)}` }, `and ${pods.length - shown.length} more`) : null);
}

// podsOf watches the pods bound to a node, in every namespace.
function podsOf(name, onPods, onError) {
  return new LiveList('/api/v1/pods', {
    fieldSelector: `spec.nodeName=${name}`,
    onChange: (_, l) => onPods(l.sorted().map((r) => r.obj)),
    onState: (s, err) => { if (err) onError(err); },
  }).start();
}

export function nodesPage(main, ctx) {
  const count = h('span', { id: 'nodes-count', class: 'count' });
  const error = h('p', { id: 'nodes-error', class: 'error', hidden: true });
  const grid = h('div', { id: 'node-cards', class: 'cards' });
  const more = h('p', { class: 'muted', hidden: true });
  main.append(h('section', { id: 'nodes', class: 'page-nodes' },
    h('div', { class: 'page-head' }, h('h1', {}, 'Nodes'), count), error, grid, more));
  const cards = new Map(); // name -> {node, pods, watch, el}
  const draw = (c) => {
    const el = nodeCard(ctx, c.node, c.pods);
    if (c.el) c.el.replaceWith(el);
    c.el = el;
  };
  const live = new LiveList('/api/v1/nodes', {
    onChange: (_, l) => {
      const nodes = l.sorted().map((r) => r.obj);
      count.textContent = `${nodes.length} node${nodes.length === 1 ? '' : 's'}`;
      const shown = nodes.slice(0, maxCards);
      const names = new Set(shown.map((n) => n.metadata.name));
      for (const [name, c] of cards) {
        if (!names.has(name)) {
          c.watch.stop();
          c.el.remove();
          cards.delete(name);
        }
      }
      for (const n of shown) {
        let c = cards.get(n.metadata.name);
        if (!c) {
          c = { node: n, pods: null };
          cards.set(n.metadata.name, c);
          c.watch = podsOf(n.metadata.name, (pods) => { c.pods = pods; draw(c); }, (err) => { error.hidden = false; error.textContent = err.message; });
        }
        if (c.node !== n || !c.el) {
          c.node = n;
          draw(c);
        }
        grid.append(c.el); // keeps the cards in name order
      }
      more.hidden = nodes.length <= maxCards;
      more.textContent = `Showing ${maxCards} of ${nodes.length} nodes; the others: ${nodes.slice(maxCards).map((n) => n.metadata.name).join(', ')}`;
    },
    onState: (s, err) => {
      if (err) {
        error.hidden = false;
        error.textContent = err.message;
      }
    },
  }).start();
  return {
    destroy() {
      live.stop();
      for (const c of cards.values()) c.watch.stop();
    },
  };
}

export function nodePage(main, ctx, { name }) {
  const podRes = ctx.disco.find('pods');
  const nodeRes = ctx.disco.find('nodes');
  const cardSlot = h('div', { id: 'node-card' });
  const info = h('div', { id: 'node-info' });
  const podsBody = h('div', { id: 'node-pods' });
  const error = h('p', { id: 'node-error', class: 'error', hidden: true });
  main.append(h('section', { id: 'node', class: 'page-node', dataset: { node: name } },
    h('div', { class: 'page-head' }, h('h1', {}, h('a', { href: '#/nodes' }, 'Node'), ' ', name)),
    error, cardSlot,
    h('section', { class: 'panel' }, h('h2', {}, 'Pods'), podsBody),
    h('section', { class: 'panel' }, h('h2', {}, 'Conditions and details'), info)));
  let node = null;
  let pods = null;
  const fail = (err) => { error.hidden = false; error.textContent = err.message; };
  const draw = () => {
    if (!node) return;
    clear(cardSlot).append(nodeCard(ctx, node, pods));
    const st = node.status || {};
    clear(info).append(
      h('table', { id: 'node-conditions', class: 'grid' },
        h('thead', {}, h('tr', {}, ['Type', 'Status', 'Reason', 'Message', 'Last heartbeat', 'Last transition'].map((t) => h('th', {}, t)))),
        h('tbody', {}, (st.conditions || []).map((c) => h('tr', { dataset: { type: c.type, status: c.status } },
          h('td', {}, c.type), h('td', { class: conditionGood(c) ? 'good' : 'bad' }, c.status), h('td', {}, c.reason || ''),
          h('td', { class: 'wrap' }, c.message || ''), h('td', {}, c.lastHeartbeatTime ? `${ago(c.lastHeartbeatTime)} ago` : ''),
          h('td', {}, c.lastTransitionTime ? `${ago(c.lastTransitionTime)} ago` : ''))))),
      h('table', { class: 'grid kv' }, h('tbody', {},
        [...(st.addresses || []).map((a) => [a.type, a.address]),
          ...Object.entries(st.nodeInfo || {}), ['created', `${ago(node.metadata.creationTimestamp)} ago`]].map(([k, v]) =>
          h('tr', {}, h('th', {}, k), h('td', {}, String(v)))))));
    if (!pods) return;
    clear(podsBody).append(pods.length ? h('table', { id: 'node-pods-table', class: 'grid' },
      h('thead', {}, h('tr', {}, ['Namespace', 'Name', 'Phase', 'CPU request', 'Memory request', 'Age'].map((t) => h('th', {}, t)))),
      h('tbody', {}, pods.map((p) => {
        const r = podRequests(p);
        return h('tr', { class: 'node-pod', dataset: { name: p.metadata.name, namespace: p.metadata.namespace } },
          h('td', {}, p.metadata.namespace),
          h('td', {}, podRes ? h('a', { href: objectHref(podRes, p.metadata.namespace, p.metadata.name) }, p.metadata.name) : p.metadata.name),
          h('td', { class: statusClass(p.status?.phase) }, p.status?.phase || 'Pending'),
          h('td', {}, r.cpu ? fmtCPU(r.cpu) : ''), h('td', {}, r.memory ? fmtBytes(r.memory) : ''),
          h('td', {}, `${ago(p.metadata.creationTimestamp)}`));
      }))) : h('p', { class: 'muted' }, 'No pods are bound to this node.'));
  };
  const nodeWatch = new LiveList(nodeRes ? resPath(nodeRes) : '/api/v1/nodes', {
    fieldSelector: `metadata.name=${name}`,
    onChange: (_, l) => {
      node = l.rows.size ? [...l.rows.values()][0].obj : null;
      if (!node) fail({ message: `Node ${name} was not found.` });
      draw();
    },
    onState: (s, err) => { if (err) fail(err); },
  }).start();
  const podWatch = podsOf(name, (p) => { pods = p; draw(); }, fail);
  return {
    destroy() {
      nodeWatch.stop();
      podWatch.stop();
    },
  };
}
