// The console's shell: signing in, the namespace and kinds it may read,
// and the hash router that shows one page at a time.

import { canI, discover, Discovery, forgetReviews, resId, token, whoami } from './api.js';
import { LiveList } from './live.js';
import { h, clear } from './util.js';
import { allNamespaces, listHref, parse } from './routes.js';
import { listPage } from './list.js';
import { objectPage } from './object.js';
import { tracePage } from './trace.js';
import { nodePage, nodesPage } from './nodes.js';
import { logsPage } from './logs.js';

const $ = (id) => document.getElementById(id);

// The kinds a person looks at first come first; the rest follow by name.
const firstKinds = ['deployments.apps', 'replicasets.apps', 'pods', 'daemonsets.apps', 'jobs.batch', 'services',
  'configmaps', 'secrets', 'serviceaccounts', 'events'];
// Served twice (events.k8s.io is core events under other names), or not
// worth a list of their own.
const hiddenKinds = new Set(['events.events.k8s.io', 'bindings', 'componentstatuses']);

const ctx = {
  disco: null,
  user: null,
  ns: 'default',
  navigate(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
};

let page = null;
let nsList = null;
let navFor = null;

function showSignIn(message) {
  document.body.dataset.page = 'signin';
  $('app').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message || '';
  $('signin-error').hidden = !message;
  $('token').value = '';
  $('token').focus();
}

async function signIn(e) {
  e.preventDefault();
  const t = $('token').value.trim();
  if (!t) return;
  token.set(t);
  sessionStorage.removeItem(discoKey);
  forgetReviews();
  await boot();
}

// Discovery is kept for the tab's session, so that a reload shows its page
// at once; it is read again behind it, for kinds defined since.
const discoKey = 'homeostat.discovery';

function cachedDiscovery() {
  try {
    const raw = JSON.parse(sessionStorage.getItem(discoKey) || 'null');
    return raw ? new Discovery(raw.map((r) => ({ ...r, subresources: new Set(r.subresources) }))) : null;
  } catch {
    return null;
  }
}

function freshDiscovery() {
  return discover().then((d) => {
    sessionStorage.setItem(discoKey, JSON.stringify(d.resources.map((r) => ({ ...r, subresources: [...r.subresources] }))));
    return d;
  });
}

async function boot() {
  const cached = cachedDiscovery();
  const fresh = freshDiscovery();
  try {
    [ctx.user, ctx.disco] = await Promise.all([whoami(), cached || fresh]);
  } catch (e) {
    token.clear();
    showSignIn(e.code === 401 ? `The API refused the token: ${e.message}` : e.message);
    return;
  }
  if (cached) fresh.then((d) => { ctx.disco = d; navFor = null; renderKinds(ctx.ns); }, () => {});
  // A ServiceAccount's own namespace is where it most likely may read.
  const sa = /^system:serviceaccount:([^:]+):/.exec(ctx.user.username || '');
  ctx.home = sa ? sa[1] : 'default';
  ctx.ns = ctx.home;
  $('signin').hidden = true;
  $('app').hidden = false;
  $('whoami').textContent = ctx.user.username || '';
  $('whoami').title = (ctx.user.groups || []).join(', ');
  route();
  setupNamespaces();
}

// setupNamespaces fills the namespace picker from a watch of namespaces,
// or, for an identity that may not list them, with its own.
async function setupNamespaces() {
  const sel = $('ns-select');
  const mayList = await canI({ verb: 'list', resource: 'namespaces' });
  const fill = (names) => {
    const want = new Set(names);
    want.add(ctx.ns);
    if (mayList) want.add(allNamespaces);
    clear(sel).append(...[...want].sort().map((n) => h('option', { value: n }, n === allNamespaces ? 'all namespaces' : n)));
    sel.value = ctx.ns;
  };
  fill([ctx.home, 'default']);
  nsList?.stop();
  if (mayList) {
    nsList = new LiveList('/api/v1/namespaces', { onChange: (_, l) => fill([...l.rows.values()].map((r) => r.name)) }).start();
  }
  $('nodes-link').hidden = !(await canI({ verb: 'list', resource: 'nodes' }));
  $('topnav').dataset.checked = 'true';
}

function onNamespace() {
  const ns = $('ns-select').value;
  const { parts, query } = parse(location.hash);
  if (parts[0] === 'ns' && parts[2]) {
    const r = ctx.disco.find(parts[2]);
    if (r) return ctx.navigate(listHref(r, ns, query.get('l') || ''));
  }
  ctx.ns = ns;
  ctx.navigate(`#/ns/${encodeURIComponent(ns)}/deployments.apps`);
}

// renderKinds lists the kinds the identity may list in the namespace;
// the rest are left out rather than shown and refused.
async function renderKinds(ns) {
  if (navFor === ns) return markCurrent();
  navFor = ns;
  const nav = $('kinds');
  const candidates = ctx.disco.resources.filter((r) => r.verbs.includes('list') && r.verbs.includes('watch') && !hiddenKinds.has(resId(r)));
  const order = (r) => {
    const i = firstKinds.indexOf(resId(r));
    return i < 0 ? firstKinds.length : i;
  };
  candidates.sort((a, b) => order(a) - order(b) || a.name.localeCompare(b.name));
  const scoped = ns === allNamespaces ? '' : ns;
  const allowed = await Promise.all(candidates.map((r) => canI(
    { namespace: r.namespaced ? scoped : '', verb: 'list', group: r.group, resource: r.name })));
  if (navFor !== ns) return;
  const link = (r) => h('a', { href: listHref(r, ns), dataset: { res: resId(r) }, title: `${r.kind} (${r.group || 'core'}/${r.version})` },
    r.kind);
  const namespaced = candidates.filter((r, i) => allowed[i] && r.namespaced);
  const cluster = candidates.filter((r, i) => allowed[i] && !r.namespaced && r.kind !== 'Node');
  clear(nav).append(h('h2', {}, 'Namespaced'), ...namespaced.map(link));
  if (cluster.length) nav.append(h('h2', {}, 'Cluster'), ...cluster.map(link));
  if (!namespaced.length) nav.append(h('p', { class: 'muted' }, `Nothing here is readable by ${ctx.user.username}.`));
  markCurrent();
}

function markCurrent() {
  const { parts } = parse(location.hash);
  const cur = parts[0] === 'ns' ? parts[2] : parts[0] === 'cluster' ? parts[1] : '';
  const r = cur && ctx.disco.find(cur);
  for (const a of $('kinds').querySelectorAll('a')) {
    if (r && a.dataset.res === resId(r)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function route() {
  if (!ctx.disco) return;
  const { parts, query } = parse(location.hash);
  page?.destroy?.();
  page = null;
  const main = clear($('main'));
  const kind = parts[0] || '';
  document.body.dataset.page = { ns: 'list', cluster: 'list', o: 'object', trace: 'trace', nodes: parts[1] ? 'node' : 'nodes', logs: 'logs' }[kind] || 'list';
  let ns = ctx.ns;
  try {
    switch (kind) {
      case 'ns':
        ns = parts[1];
        page = listPage(main, ctx, { res: parts[2] || 'pods', ns, labels: query.get('l') || '', wide: query.get('wide') === '1' });
        break;
      case 'cluster':
        page = listPage(main, ctx, { res: parts[1], ns: '', labels: query.get('l') || '', wide: query.get('wide') === '1' });
        break;
      case 'o':
        if (parts[4] !== '_') ns = parts[4];
        page = objectPage(main, ctx, { group: parts[1], version: parts[2], res: parts[3], ns: parts[4] === '_' ? '' : parts[4], name: parts[5] });
        break;
      case 'trace':
        page = tracePage(main, ctx, { id: parts[1] || '' });
        break;
      case 'nodes':
        page = parts[1] ? nodePage(main, ctx, { name: parts[1] }) : nodesPage(main, ctx);
        break;
      case 'logs':
        ns = parts[1];
        page = logsPage(main, ctx, { ns, pod: parts[2], container: query.get('c') || '', previous: query.get('previous') === '1' });
        break;
      default:
        ctx.navigate(`#/ns/${encodeURIComponent(ctx.ns)}/deployments.apps`);
        return;
    }
  } catch (e) {
    main.append(h('p', { class: 'error' }, String(e.message || e)));
  }
  if (ns && ns !== ctx.ns) {
    ctx.ns = ns;
    const sel = $('ns-select');
    if (![...sel.options].some((o) => o.value === ns)) sel.append(h('option', { value: ns }, ns === allNamespaces ? 'all namespaces' : ns));
  }
  $('ns-select').value = ctx.ns;
  // The kinds wait for the page's first data (or a second): their access
  // reviews would otherwise compete with what the page is loading.
  const nsNow = ctx.ns;
  Promise.race([page?.ready, new Promise((r) => setTimeout(r, 1000))]).then(() => {
    if (ctx.ns === nsNow) renderKinds(nsNow);
  });
}

function signOut() {
  token.clear();
  sessionStorage.removeItem(discoKey);
  forgetReviews();
  location.hash = '';
  location.reload();
}

function start() {
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', signOut);
  $('ns-select').addEventListener('change', onNamespace);
  window.addEventListener('hashchange', route);
  // A token revoked or expired mid-session: ask for another, keeping the page.
  window.addEventListener('hs-unauthorized', (e) => {
    page?.destroy?.();
    page = null;
    token.clear();
    showSignIn(`The API no longer accepts the token: ${e.detail || 'Unauthorized'}`);
  });
  if (token.get()) boot();
  else showSignIn('');
}

start();
