// The console's client of the API. Every request carries the bearer token
// the user signed in with; the API decides what it may see and do.

const tokenKey = 'homeostat.token';

export const TABLE = 'application/json;as=Table;g=meta.k8s.io;v=v1';

// The token lives in sessionStorage: it goes when the tab closes and is
// never sent anywhere but this API.
export const token = {
  get: () => sessionStorage.getItem(tokenKey) || '',
  set: (t) => sessionStorage.setItem(tokenKey, t),
  clear: () => sessionStorage.removeItem(tokenKey),
};

// ApiError is a refusal or failure, with the message of the API's Status.
export class ApiError extends Error {
  constructor(code, reason, message) {
    super(message || `${code} ${reason || ''}`.trim());
    this.code = code;
    this.reason = reason;
  }
}

function headers(extra) {
  const hd = { Authorization: `Bearer ${token.get()}`, ...extra };
  return hd;
}

// errorOf turns an unsuccessful answer into an ApiError, reading the
// Status the API sends with it.
async function errorOf(resp) {
  let reason = resp.statusText;
  let message = '';
  try {
    const text = await resp.text();
    try {
      const st = JSON.parse(text);
      reason = st.reason || reason;
      message = st.message || '';
    } catch {
      message = text.trim();
    }
  } catch { /* the body is gone: the code says enough */ }
  if (resp.status === 401) window.dispatchEvent(new CustomEvent('hs-unauthorized', { detail: message }));
  return new ApiError(resp.status, reason, message || `${resp.status} ${reason}`);
}

// fetchOK makes a request and returns the response, or throws the API's
// refusal as an ApiError.
export async function fetchOK(method, path, { body, contentType, accept, signal } = {}) {
  const hd = headers({ Accept: accept || 'application/json' });
  if (body !== undefined) hd['Content-Type'] = contentType || 'application/json';
  let resp;
  try {
    resp = await fetch(path, {
      method, headers: hd, signal, cache: 'no-store',
      body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'Unreachable', `the API cannot be reached: ${e.message}`);
  }
  if (!resp.ok) throw await errorOf(resp);
  return resp;
}

// request answers with the body as JSON.
export async function request(method, path, opts) {
  const resp = await fetchOK(method, path, opts);
  if (resp.status === 204) return null;
  return resp.json();
}

export const get = (path, opts) => request('GET', path, opts);

// readLines calls onLine with each line of a streamed body as it comes,
// and resolves when the stream ends.
export async function readLines(resp, onLine) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line) onLine(line);
    }
  }
  buf += dec.decode();
  if (buf) onLine(buf);
}

// Resources as discovery names them.
export function resPath(r, ns, name, sub) {
  let p = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  if (r.namespaced && ns) p += `/namespaces/${encodeURIComponent(ns)}`;
  p += `/${r.name}`;
  if (name) p += `/${encodeURIComponent(name)}`;
  if (sub) p += `/${sub}`;
  return p;
}

// resId names a resource in routes: its plural, with its group when it
// has one (deployments.apps).
export const resId = (r) => (r.group ? `${r.name}.${r.group}` : r.name);

// Discovery is what the API serves: each resource's group, version,
// kind, scope and verbs, with its subresources.
export class Discovery {
  constructor(resources) {
    this.resources = resources;
    this.byId = new Map(resources.map((r) => [resId(r), r]));
    this.byKind = new Map();
    for (const r of resources) if (!this.byKind.has(r.kind)) this.byKind.set(r.kind, r);
  }

  // find resolves "deployments", "deployments.apps" or a kind.
  find(id) {
    if (this.byId.has(id)) return this.byId.get(id);
    const plural = this.resources.filter((r) => r.name === id);
    if (plural.length) return plural.find((r) => !r.group) || plural[0];
    return this.byKind.get(id) || null;
  }

  // of finds a resource by group, version and plural as routes name it.
  of(group, version, plural) {
    const g = group === 'core' ? '' : group;
    return this.resources.find((r) => r.group === g && r.name === plural && (!version || r.version === version)) ||
      this.resources.find((r) => r.group === g && r.name === plural) || null;
  }
}

export async function discover() {
  const lists = [];
  const core = await get('/api');
  for (const v of core.versions || []) lists.push({ group: '', version: v, path: `/api/${v}` });
  const groups = await get('/apis');
  for (const g of groups.groups || []) {
    const v = g.preferredVersion || g.versions[0];
    lists.push({ group: g.name, version: v.version, path: `/apis/${v.groupVersion}` });
  }
  const answers = await Promise.allSettled(lists.map((l) => get(l.path)));
  const resources = [];
  answers.forEach((a, i) => {
    if (a.status !== 'fulfilled') return;
    const { group, version } = lists[i];
    const subs = new Map();
    for (const r of a.value.resources || []) {
      const [base, sub] = r.name.split('/');
      if (sub) {
        if (!subs.has(base)) subs.set(base, new Set());
        subs.get(base).add(sub);
      }
    }
    for (const r of a.value.resources || []) {
      if (r.name.includes('/')) continue;
      resources.push({ group, version, name: r.name, kind: r.kind, namespaced: r.namespaced,
        verbs: r.verbs || [], shortNames: r.shortNames || [], subresources: subs.get(r.name) || new Set() });
    }
  });
  return new Discovery(resources);
}

// whoami asks the API who the token is.
export async function whoami() {
  const r = await request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
  return r.status?.userInfo || {};
}

// canI asks the API whether the signed-in identity may do something; the
// answers are kept for the session, since the console only uses them to
// decide which buttons to show: the API checks each write again.
const reviews = new Map();

export function canI(attrs) {
  const key = JSON.stringify(attrs);
  if (!reviews.has(key)) {
    const review = request('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: attrs } },
    }).then((r) => !!r.status?.allowed, () => false);
    reviews.set(key, review);
  }
  return reviews.get(key);
}

export function forgetReviews() {
  reviews.clear();
}
