// A pod's log, streamed as the container writes it (follow=true), through
// the API, which proxies it from the pod's node.

import { fetchOK, get } from './api.js';
import { h, clear } from './util.js';
import { logsHref, objectHref } from './routes.js';

// What the page keeps: a followed log may run for days.
const maxLines = 10000;
const tail = 500;

export function logsPage(main, ctx, { ns, pod, container, previous }) {
  const podRes = ctx.disco.find('pods');
  const out = h('pre', { id: 'log-output', class: 'log', tabindex: '0', dataset: { lines: '0' } });
  const state = h('span', { id: 'log-state', class: 'live-state' });
  const select = h('select', { id: 'log-container', 'aria-label': 'container' });
  const follow = h('input', { id: 'log-follow', type: 'checkbox', checked: !previous });
  const page = h('section', { id: 'logs', class: 'page-logs', dataset: { pod, namespace: ns } },
    h('div', { class: 'page-head' },
      h('h1', {}, 'Logs of ', podRes ? h('a', { href: objectHref(podRes, ns, pod) }, pod) : pod, h('span', { class: 'sub' }, ` in ${ns}`)),
      h('label', {}, 'Container ', select),
      h('label', { class: 'check' }, follow, ' follow'),
      previous ? h('span', { class: 'chip' }, 'previous run') : null,
      state),
    out);
  main.append(page);

  let ctrl = null;
  let live = true;
  let buffered = '';
  let frame = 0;
  let lines = 0;

  function setState(s, cls) {
    state.textContent = s;
    state.className = `live-state ${cls || ''}`;
    page.dataset.state = cls || s;
  }

  // Text is appended once per frame, however fast it comes.
  function flush() {
    frame = 0;
    if (!buffered) return;
    const atBottom = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
    out.append(buffered);
    lines += (buffered.match(/\n/g) || []).length;
    buffered = '';
    if (lines > maxLines) {
      const text = out.textContent;
      const keep = text.split('\n').slice(-maxLines).join('\n');
      out.textContent = keep;
      lines = maxLines;
    }
    out.dataset.lines = String(lines);
    if (atBottom) out.scrollTop = out.scrollHeight;
  }

  async function stream(c) {
    ctrl?.abort();
    ctrl = new AbortController();
    clear(out);
    lines = 0;
    out.dataset.lines = '0';
    setState('connecting…', 'loading');
    const q = new URLSearchParams({ container: c, tailLines: String(tail) });
    if (follow.checked) q.set('follow', 'true');
    if (previous) q.set('previous', 'true');
    try {
      const resp = await fetchOK('GET', `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(pod)}/log?${q}`,
        { accept: 'text/plain', signal: ctrl.signal });
      setState(follow.checked ? '● streaming' : 'read', 'live');
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += dec.decode(value, { stream: true });
        if (!frame) frame = requestAnimationFrame(flush);
      }
      buffered += dec.decode();
      flush();
      if (live) setState(follow.checked ? 'the stream ended (the container stopped, or the connection dropped)' : 'end of log', 'ended');
    } catch (e) {
      if (e.name === 'AbortError') return;
      flush();
      setState(e.message, 'error');
    }
  }

  get(`/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(pod)}`).then((p) => {
    if (!live) return;
    const names = (p.spec?.containers || []).map((c) => c.name);
    clear(select).append(...names.map((n) => h('option', { value: n }, n)));
    const c = container && names.includes(container) ? container : names[0];
    select.value = c;
    select.addEventListener('change', () => ctx.navigate(logsHref(ns, pod, select.value)));
    follow.addEventListener('change', () => stream(select.value));
    stream(c);
  }, (e) => setState(e.message, 'error'));

  return {
    destroy() {
      live = false;
      ctrl?.abort();
      if (frame) cancelAnimationFrame(frame);
    },
  };
}
