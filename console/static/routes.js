// Routes are hashes, so the API serves one page and links survive a reload:
//   #/ns/NS/RESOURCE?l=SELECTOR   objects of a kind (NS "_all": every namespace)
//   #/cluster/RESOURCE            objects of a cluster-scoped kind
//   #/o/GROUP/VERSION/RESOURCE/NS/NAME   one object (GROUP "core", NS "_")
//   #/trace/ID   #/nodes   #/nodes/NAME   #/logs/NS/POD?c=CONTAINER

import { resId } from './api.js';

const enc = encodeURIComponent;

export const allNamespaces = '_all';

export function listHref(r, ns, labels) {
  const base = r.namespaced ? `#/ns/${enc(ns || 'default')}/${resId(r)}` : `#/cluster/${resId(r)}`;
  return labels ? `${base}?l=${enc(labels)}` : base;
}

export function objectHref(r, ns, name) {
  if (r.kind === 'Node' && !r.group) return `#/nodes/${enc(name)}`;
  return `#/o/${r.group || 'core'}/${r.version}/${r.name}/${r.namespaced ? enc(ns) : '_'}/${enc(name)}`;
}

export const traceHref = (id) => `#/trace/${id}`;

export function logsHref(ns, pod, container) {
  return `#/logs/${enc(ns)}/${enc(pod)}${container ? `?c=${enc(container)}` : ''}`;
}

// parse splits the hash into its path parts and query.
export function parse(hash) {
  const raw = hash.replace(/^#\/?/, '');
  const [path, qs] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(qs || '') };
}
