package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/testenv/poll"
	"github.com/homeostat/homeostat/testenv/tcpproxy"
)

// The console's tests drive the real binary's API with a real browser
// (Debian's chromium, headless), signed in with ServiceAccount tokens as a
// person would be.

// chromium finds the browser, failing the test with how to install it:
// these tests never skip.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/lib/chromium/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed, and the console tests drive a real browser: install it with `apt-get install chromium` (Debian) and run the tests again")
	return ""
}

// startBrowser starts a headless chromium for the test. The API's
// certificate is its own authority's, which the browser does not know.
func startBrowser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.WindowSize(1400, 900),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox (CI runs as root).
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx
}

// tab is one browser tab (its own sessionStorage, so its own sign-in).
type tab struct {
	t   testing.TB
	ctx context.Context
	mu  sync.Mutex
	// exceptions are the page's uncaught errors and policy violations: a
	// console test fails on any.
	exceptions []string
}

func newTab(t testing.TB, browser context.Context) *tab {
	t.Helper()
	ctx, cancelTab := chromedp.NewContext(browser)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	tb := &tab{t: t, ctx: ctx}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			// An uncaught error, or anything the page's policy refused.
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				tb.mu.Lock()
				tb.exceptions = append(tb.exceptions, m.String())
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelTab()
		<-done
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, e := range tb.exceptions {
			t.Errorf("the page threw: %s", e)
		}
	})
	return tb
}

func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// until waits for a JavaScript predicate to hold in the page: a state the
// page must reach, with a deadline.
func (tb *tab) until(what, expr string, within time.Duration) {
	tb.t.Helper()
	if _, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingTimeout(within), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		tb.t.Fatalf("waiting %s for %s: %v\npage: %s", within, what, err, tb.eval(`document.querySelector('main')?.innerText.slice(0, 2000)`))
	}
}

// eval evaluates an expression (awaiting a promise) and returns its value.
func (tb *tab) eval(expr string) any {
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[any](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		return fmt.Sprintf("(evaluation failed: %v)", err)
	}
	return v
}

// text is an element's text, read in one evaluation: the page replaces
// parts it redraws, so a node found by one call may be gone by the next.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	s, err := chromedp.Run(tb.ctx, chromedp.Evaluate[*string](fmt.Sprintf(`document.querySelector(%q)?.textContent ?? null`, sel)))
	if err != nil || s == nil {
		tb.t.Fatalf("text of %s: %v (no such element: %t)", sel, err, s == nil)
	}
	return *s
}

// shot writes a full-page screenshot for a person to look at.
func (tb *tab) shot(dir, name string) {
	tb.t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", path)
}

// signIn opens the console and signs in with a token through its form.
func (tb *tab) signIn(api, token string) {
	tb.t.Helper()
	tb.do("sign in", chromedp.Navigate(api+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("signin-submit")))
	tb.until("the signed-in identity in the header", `document.getElementById('whoami').textContent.startsWith('system:serviceaccount:')`, 15*time.Second)
}

// open goes to a console route without reloading the page.
func (tb *tab) open(route string) {
	tb.t.Helper()
	tb.do("open "+route, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", route)))
}

// typeReplicas enters a number of replicas as typing would: the input
// event marks it as the person's, which the page keeps until it is sent.
func typeReplicas(n string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const i = document.getElementById('scale-replicas');
		i.value = %q;
		i.dispatchEvent(new Event('input', {bubbles: true}));
	})()`, n))
}

// tokenFor makes a ServiceAccount with a role bound in default (a
// RoleBinding, or a ClusterRoleBinding when cluster is set) and returns a
// token of it.
func tokenFor(t *testing.T, s *server, name, role string, cluster bool) string {
	t.Helper()
	binding := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %[1]s, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[2]s}
subjects: [{kind: ServiceAccount, name: %[1]s, namespace: default}]
`, name, role)
	if cluster {
		binding = strings.Replace(strings.Replace(binding, "RoleBinding", "ClusterRoleBinding", 1), ", namespace: default}\nroleRef", "}\nroleRef", 1)
	}
	s.must(fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: %s}\n---\n%s", name, binding), "apply", "-f", "-")
	return strings.TrimSpace(s.must("", "token", "create", name, "--ttl", "1h"))
}

// tokenClient is an HTTP client of the API presenting only a token.
func tokenClient(t *testing.T, s *server, token string) *http.Client {
	t.Helper()
	c, err := kubeconfig.Load(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err = c.WithToken("", "token", token)
	if err != nil {
		t.Fatal(err)
	}
	target, err := c.Target("")
	if err != nil {
		t.Fatal(err)
	}
	return target.HTTPClient()
}

func request(t *testing.T, c *http.Client, method, url, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Message string }
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return resp.StatusCode, st.Message
}

const consoleManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        command: [sleep, "3600"]
        resources: {requests: {cpu: 100m, memory: 16Mi}}
        readinessProbe:
          exec: {command: ["true"]}
          periodSeconds: 1
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: huge}
spec:
  replicas: 2
  selector: {matchLabels: {app: huge}}
  template:
    metadata: {labels: {app: huge}}
    spec:
      containers:
      - name: huge
        command: [sleep, "3600"]
        resources: {requests: {cpu: "1000"}}
---
apiVersion: v1
kind: Pod
metadata: {name: talker, labels: {app: talker}}
spec:
  containers:
  - name: talk
    command: [sh, -c, 'i=0; while true; do echo "line $i"; i=$((i+1)); sleep 0.1; done']
`

// TestConsole drives the console against one `homeostat up`: a live
// rollout, an unschedulable Deployment's root cause, what a read-only
// identity sees and may do, a refused write, and the list, trace, logs and
// nodes pages, with a screenshot of each.
func TestConsole(t *testing.T) {
	browser := startBrowser(t)
	dir := t.TempDir()
	s := startUp(t, dir)
	shots := t.ArtifactDir()
	t.Logf("screenshots go to %s (keep them with go test -artifacts -outputdir DIR)", shots)
	s.must(consoleManifest, "apply", "-f", "-")
	admin := tokenFor(t, s, "console-admin", "cluster-admin", true)

	t.Run("LiveRolloutAndTrace", func(t *testing.T) {
		tb := newTab(t, browser)
		tb.do("open the console", chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")))
		tb.shot(shots, "sign-in")
		tb.signIn(s.url, admin)
		tb.open("#/o/apps/v1/deployments/default/web")
		tb.until("the Deployment at 0/0 with a Scale button", `document.getElementById('status-ready')?.textContent === '0/0' && !!document.getElementById('act-scale')`, 20*time.Second)
		// Mark the page: a reload would lose the mark.
		tb.do("mark the page and record what it shows", chromedp.Evaluate[chromedp.Void](`
			window.consoleMark = true;
			window.readySeen = [document.getElementById('status-ready').textContent];
			new MutationObserver(() => {
				const v = document.getElementById('status-ready')?.textContent;
				if (v && v !== window.readySeen[window.readySeen.length - 1]) window.readySeen.push(v);
			}).observe(document.getElementById('summary'), {childList: true, subtree: true, characterData: true});`))
		tb.do("scale to 3 from the console", typeReplicas("3"), chromedp.Click(chromedp.ID("act-scale")))
		tb.until("the scale acknowledged", `document.querySelector('#action-msg.ok') !== null`, 15*time.Second)
		tb.until("the page at 3/3 as the pods become ready", `document.getElementById('status-ready')?.textContent === '3/3'`, 60*time.Second)
		if tb.eval(`window.consoleMark === true`) != true {
			t.Fatal("the page was reloaded on the way to 3/3")
		}
		t.Logf("ready counts the page showed: %v", tb.eval(`window.readySeen.join(' → ')`))
		tb.until("its 3 pods listed, each ready", `document.getElementById('pods')?.dataset.count === '3' &&
			[...document.querySelectorAll('#pods-table .vt-row:not([hidden]) [data-col="Ready"]')].filter(c => c.textContent === '1/1').length === 3`, 20*time.Second)
		tb.until("the explanation: healthy at 3 ready", `document.getElementById('object')?.dataset.health === 'Healthy' &&
			document.querySelector('#explain .progress .chip[data-name="ready"]')?.textContent === 'ready 3'`, 20*time.Second)
		tb.shot(shots, "deployment")

		// The trace of the latest write: the scale, the reconciles it set off,
		// the binds and the process starts. Spans are stored in batches, so the
		// page is read again until every step is in.
		steps := []string{"api", "reconcile", "bind", "start"}
		var last any
		ok := poll.Within(30*time.Second, func() bool {
			tb.open("#/o/apps/v1/deployments/default/web")
			tb.until("the link to the latest write's trace", `!!document.getElementById('latest-trace')`, 15*time.Second)
			// Followed by its address: the page redraws the link as it reads
			// the object's state again.
			href, _ := tb.eval(`document.getElementById('latest-trace').getAttribute('href')`).(string)
			if !strings.HasPrefix(href, "#/trace/") {
				t.Fatalf("the latest write's trace links to %q", href)
			}
			tb.open(href)
			tb.until("the trace drawn", `!!document.querySelector('#waterfall .span-row[data-kind]') || !!document.getElementById('trace-error')`, 15*time.Second)
			last = tb.eval(`[...new Set([...document.querySelectorAll('#waterfall .span-row[data-kind]')].map(r => r.dataset.kind))].join(',')`)
			kinds, _ := last.(string)
			for _, k := range steps {
				if !strings.Contains(kinds, k) {
					return false
				}
			}
			return true
		})
		if !ok {
			t.Fatalf("the waterfall never held every step %v; it last showed %v", steps, last)
		}
		if n := tb.eval(`document.querySelectorAll('#waterfall .span-row[data-kind="api"] .span-bar').length`); n == float64(0) {
			t.Fatal("the waterfall draws no bar for the API request")
		}
		tb.do("choose the API request's span", chromedp.Click(chromedp.CSS(`#waterfall .span-row[data-kind="api"]`)))
		if d := tb.text("#span-detail"); !strings.Contains(d, "http.request.method") {
			t.Fatalf("the span's detail shows no attributes:\n%s", d)
		}
		tb.shot(shots, "trace")
	})

	t.Run("UnschedulableRootCause", func(t *testing.T) {
		tb := newTab(t, browser)
		tb.signIn(s.url, admin)
		tb.open("#/o/apps/v1/deployments/default/huge")
		tb.until("the root cause on a Pod node of the tree", `!!document.querySelector('#explain-tree .tree-node.is-root-cause[data-kind="Pod"][data-on-root-cause="true"]')`, 30*time.Second)
		tb.until("the fix naming the cpu request", `(document.getElementById('root-cause-fix')?.textContent || '').includes('resources.requests.cpu')`, 10*time.Second)
		if r := tb.text("#root-cause-reason"); r != "Unschedulable" {
			t.Fatalf("root cause reason %q, want Unschedulable", r)
		}
		// The way down to it is marked, and nothing off it.
		if got := tb.eval(`[...document.querySelectorAll('#explain-tree .tree-node.on-root-cause')].map(n => n.dataset.kind).join(',')`); got != "Deployment,ReplicaSet,Pod" {
			t.Fatalf("nodes marked on the way to the root cause: %v, want Deployment,ReplicaSet,Pod", got)
		}
		tb.shot(shots, "unschedulable")
	})

	t.Run("ReadOnlyIdentity", func(t *testing.T) {
		viewer := tokenFor(t, s, "console-viewer", "view", false)
		tb := newTab(t, browser)
		tb.signIn(s.url, viewer)
		tb.open("#/o/apps/v1/deployments/default/web")
		tb.until("the page's access reviews answered", `document.getElementById('actions')?.dataset.checked === 'true'`, 20*time.Second)
		if n := tb.eval(`document.querySelectorAll('#act-scale, #act-restart, #act-delete, #act-delete-confirm, #scale-replicas').length`); n != float64(0) {
			t.Fatalf("a read-only identity sees %v write controls", n)
		}
		tb.until("the object itself readable", `document.getElementById('status-ready')?.textContent === '3/3'`, 20*time.Second)
		// Only what it may list is offered: no Secrets, no Nodes.
		tb.until("the kinds it may list", `!!document.querySelector('#kinds a[data-res="deployments.apps"]')`, 20*time.Second)
		if n := tb.eval(`document.querySelectorAll('#kinds a[data-res="secrets"]').length`); n != float64(0) {
			t.Fatal("the kinds offer Secrets to an identity that may not list them")
		}
		tb.until("the header's links checked", `document.getElementById('topnav').dataset.checked === 'true'`, 20*time.Second)
		if tb.eval(`document.getElementById('nodes-link').hidden`) != true {
			t.Fatal("the Nodes link is shown to an identity that may not list nodes")
		}
		// A write forged from the page, with the page's own token, is refused.
		code := tb.eval(`fetch('/apis/apps/v1/namespaces/default/deployments/web/scale', {method: 'PATCH',
			headers: {Authorization: 'Bearer ' + sessionStorage.getItem('homeostat.token'), 'Content-Type': 'application/merge-patch+json'},
			body: JSON.stringify({spec: {replicas: 0}})}).then(r => r.status)`)
		if code != float64(http.StatusForbidden) {
			t.Fatalf("a scale forged from the page: %v, want 403", code)
		}
		code = tb.eval(`fetch('/apis/apps/v1/namespaces/default/deployments/web', {method: 'DELETE',
			headers: {Authorization: 'Bearer ' + sessionStorage.getItem('homeostat.token')}}).then(r => r.status)`)
		if code != float64(http.StatusForbidden) {
			t.Fatalf("a delete forged from the page: %v, want 403", code)
		}
		// And so is one sent straight to the API with the token.
		c := tokenClient(t, s, viewer)
		if code, msg := request(t, c, http.MethodPatch, s.url+"/apis/apps/v1/namespaces/default/deployments/web",
			"application/strategic-merge-patch+json", `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"now"}}}}}`); code != http.StatusForbidden {
			t.Fatalf("a rollout restart with the read-only token: %d %s, want 403", code, msg)
		}
		var d struct{ Spec struct{ Replicas int } }
		if err := json.Unmarshal([]byte(s.must("", "get", "deployment", "web", "-o", "json")), &d); err != nil || d.Spec.Replicas != 3 {
			t.Fatalf("replicas after the refused writes: %d (%v), want 3", d.Spec.Replicas, err)
		}
		tb.shot(shots, "read-only")

		// A token revoked while the page is open: the next request is
		// refused, and the page asks for another token, saying why.
		s.must("", "token", "revoke", viewer)
		poll.Until(t, "the API to refuse the revoked token", 15*time.Second, func() bool {
			code, _ := request(t, c, http.MethodGet, s.url+"/api/v1/namespaces/default/pods", "", "")
			return code == http.StatusUnauthorized
		})
		tb.open("#/ns/default/pods")
		tb.until("the sign-in form again, saying why", `!document.getElementById('signin').hidden &&
			document.getElementById('signin-error').textContent.includes('revoked')`, 15*time.Second)
		if tb.eval(`sessionStorage.getItem('homeostat.token')`) != nil {
			t.Fatal("the page kept the refused token")
		}
	})

	t.Run("DroppedStreamRelists", func(t *testing.T) {
		// The page reaches the API through a proxy that can cut it off.
		u, err := url.Parse(s.url)
		if err != nil {
			t.Fatal(err)
		}
		proxy, err := tcpproxy.New(u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(proxy.Close)
		via := "https://" + proxy.Addr()
		tb := newTab(t, browser)
		tb.signIn(via, admin)
		tb.open("#/ns/default/configmaps")
		tb.until("the ConfigMaps listed live", `document.getElementById('list')?.dataset.state === 'live'`, 20*time.Second)
		tb.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.consoleMark = true`))
		proxy.Set(tcpproxy.Drop)
		tb.until("the page to notice its watch is gone", `document.getElementById('list').dataset.state !== 'live'`, 15*time.Second)
		s.must("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: made-while-cut}\ndata: {a: b}\n", "apply", "-f", "-")
		proxy.Set(tcpproxy.Pass)
		tb.until("the list again, with what changed while it was cut", `document.getElementById('list').dataset.state === 'live' &&
			!!document.querySelector('#list-table .vt-row[data-name="made-while-cut"]')`, 40*time.Second)
		if tb.eval(`window.consoleMark === true`) != true {
			t.Fatal("the page was reloaded")
		}
	})

	t.Run("RefusedWriteShowsStatus", func(t *testing.T) {
		editor := tokenFor(t, s, "console-editor", "edit", false)
		tb := newTab(t, browser)
		tb.signIn(s.url, editor)
		tb.open("#/o/apps/v1/deployments/default/web")
		tb.until("the editor's write buttons", `!!document.getElementById('act-scale') && !!document.getElementById('act-restart') && !!document.getElementById('act-delete')`, 20*time.Second)
		// The binding goes after the page asked: the button stays, the API refuses.
		s.must("", "delete", "rolebinding", "console-editor")
		c := tokenClient(t, s, editor)
		poll.Until(t, "the API to refuse the editor", 15*time.Second, func() bool {
			code, _ := request(t, c, http.MethodGet, s.url+"/apis/apps/v1/namespaces/default/deployments/web", "", "")
			return code == http.StatusForbidden
		})
		tb.do("scale from the console", typeReplicas("1"), chromedp.Click(chromedp.ID("act-scale")))
		tb.until("the refusal shown", `document.querySelector('#action-msg.error')?.dataset.code === '403'`, 15*time.Second)
		if msg := tb.text("#action-msg"); !strings.Contains(msg, "forbidden") || !strings.Contains(msg, "system:serviceaccount:default:console-editor") {
			t.Fatalf("the console showed %q, not the API's Status message", msg)
		}
		tb.shot(shots, "refused-write")
	})

	t.Run("ListFilterLogsNodes", func(t *testing.T) {
		tb := newTab(t, browser)
		tb.signIn(s.url, admin)
		tb.open("#/ns/default/pods")
		tb.until("the pods listed live", `document.getElementById('list')?.dataset.state === 'live' && document.getElementById('list').dataset.count === '6'`, 30*time.Second)
		tb.do("filter by label", chromedp.SetValue(chromedp.ID("label-filter"), "app=web"), chromedp.Click(chromedp.ID("label-filter-apply")))
		tb.until("only the web pods", `location.hash.includes('?l=app%3Dweb') && document.getElementById('list')?.dataset.count === '3' &&
			[...document.querySelectorAll('#list-table .vt-row:not([hidden])')].every(r => r.dataset.name.startsWith('web-'))`, 20*time.Second)
		tb.shot(shots, "pod-list")

		// A pod's log, streaming: it grows while the page is open.
		tb.open("#/logs/default/talker")
		tb.until("the log streaming", `document.getElementById('logs')?.dataset.state === 'live' && /^line \d+$/m.test(document.getElementById('log-output')?.textContent || '')`, 30*time.Second)
		first := tb.eval(`Number(document.getElementById('log-output').dataset.lines)`)
		tb.until("more lines as the container writes them", fmt.Sprintf(`Number(document.getElementById('log-output').dataset.lines) >= %v + 5`, first), 20*time.Second)
		tb.shot(shots, "logs")

		// The node: capacity, what its pods request, conditions, its pods.
		node := nodeName(dir)
		tb.open("#/nodes")
		card := fmt.Sprintf(`.node-card[data-node=%q]`, node)
		// Its pods: the 3 web pods (100m each) and the talker; the huge
		// ones are bound nowhere.
		tb.until("the node's card with its allocation", fmt.Sprintf(`document.querySelector('%s .alloc[data-resource="pods"]')?.dataset.used === '4' &&
			document.querySelector('%s .alloc[data-resource="cpu"] .alloc-label').textContent.startsWith('cpu: 300m of ')`, card, card), 30*time.Second)
		if n := tb.eval(fmt.Sprintf(`document.querySelectorAll('%s .conditions .chip[data-type="Ready"][data-status="True"]').length`, card)); n != float64(1) {
			t.Fatal("the node card shows no Ready=True condition")
		}
		tb.shot(shots, "nodes")
		tb.open("#/nodes/" + node)
		tb.until("the node's pods", `document.querySelectorAll('#node-pods-table tr.node-pod').length === 4 && !!document.querySelector('#node-pods-table tr.node-pod[data-name="talker"]')`, 20*time.Second)
		tb.shot(shots, "node")
	})
}
