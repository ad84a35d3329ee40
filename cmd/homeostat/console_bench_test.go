package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/homeostat/homeostat/kubeconfig"
	"github.com/homeostat/homeostat/testenv"
	"github.com/homeostat/homeostat/testenv/poll"
)

const (
	benchPods  = 10000
	benchBurst = 1000
	benchRuns  = 5
)

// BenchmarkConsolePodList measures the console's pod list over 10,000
// pods: how long until its first rows are painted, opened in a page that
// loads (the console's files, sign-in state, discovery and the list) and
// from another page of the console, and how long a burst of 1,000 pod
// changes takes to show. The pods are bare and name a scheduler nobody
// runs, so they stay Pending and nothing else writes them. It reports the
// medians of several runs:
//
//	go test -run '^$' -bench ConsolePodList -benchtime 1x ./cmd/homeostat
func BenchmarkConsolePodList(b *testing.B) {
	b.StopTimer()
	api, admin, token := benchUp(b)
	createPods(b, api, admin)

	browser := startBrowser(b)
	tb := newTab(b, browser)
	tb.signIn(api, token)
	list := func() map[string]string {
		v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[map[string]string](`({...document.getElementById('list')?.dataset})`))
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	num := func(m map[string]string, k string) float64 {
		f, _ := strconv.ParseFloat(m[k], 64)
		return f
	}
	var loaded, opened, complete, shown, lag []float64
	b.StartTimer()
	for run := range benchRuns {
		// A page load: from navigation start (performance.now's origin).
		tb.do("leave the console", chromedp.Navigate("about:blank"))
		start := time.Now()
		tb.do("load the pod list", chromedp.Navigate(api+"/ui/#/ns/bench/pods"))
		tb.until("the first rows painted", `!!document.getElementById('list')?.dataset.firstPaint && document.querySelectorAll('#list-table .vt-row').length > 0`, time.Minute)
		loaded = append(loaded, num(list(), "firstPaint"))
		tb.until("every pod listed", fmt.Sprintf(`document.getElementById('list')?.dataset.count === '%d' && document.getElementById('list').dataset.state === 'live'`, benchPods), time.Minute)
		complete = append(complete, float64(time.Since(start).Milliseconds()))

		// From another page of the console, as a click in its menu.
		tb.open("#/ns/bench/deployments.apps")
		tb.until("the other page", `document.getElementById('list')?.dataset.resource === 'deployments'`, time.Minute)
		tb.open("#/ns/bench/pods")
		tb.until("the first rows painted", `document.getElementById('list')?.dataset.resource === 'pods' && !!document.getElementById('list').dataset.firstPaint`, time.Minute)
		m := list()
		opened = append(opened, num(m, "firstPaint")-num(m, "started"))
		tb.until("the list live", fmt.Sprintf(`document.getElementById('list')?.dataset.count === '%d' && document.getElementById('list').dataset.state === 'live'`, benchPods), time.Minute)

		// A burst: 1,000 pods' status changed at once, the first screen's
		// among them. It has shown once the list holds the revision of the
		// last write, and the first row says so.
		reason := fmt.Sprintf("Burst%d", run)
		burstStart := time.Now()
		last := burst(b, api, admin, reason)
		acked := time.Now()
		tb.until("the burst shown", fmt.Sprintf(`Number(document.getElementById('list').dataset.rv) >= %d &&
			document.querySelector('#list-table .vt-row[data-name="p-00000"] [data-col="Status"]')?.textContent === %q`, last, reason), time.Minute)
		done := time.Now()
		shown = append(shown, float64(done.Sub(burstStart).Milliseconds()))
		lag = append(lag, float64(done.Sub(acked).Milliseconds()))
		if run == 0 {
			tb.shot(b.ArtifactDir(), "bench-pods")
		}
	}
	b.StopTimer()
	b.ReportMetric(median(loaded), "load-first-paint-ms")
	b.ReportMetric(median(opened), "nav-first-paint-ms")
	b.ReportMetric(median(complete), "load-all-rows-ms")
	b.ReportMetric(median(shown), "burst-shown-ms")
	b.ReportMetric(median(lag), "burst-after-last-ack-ms")
	b.Logf("page load → first rows painted: %v ms; in-app: %v ms; all %d rows live: %v ms; burst of %d shown: %v ms (after the last write's answer: %v ms)",
		loaded, opened, benchPods, complete, benchBurst, shown, lag)
}

// kubeconfigClient is a client of the kubeconfig's current context.
func kubeconfigClient(path string) (*http.Client, error) {
	target, err := kubeconfig.LoadTarget(path)
	if err != nil {
		return nil, err
	}
	return target.HTTPClient(), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchUp starts `homeostat up` with no node agent and returns the API's
// address, an admin client and a cluster-admin ServiceAccount's token.
func benchUp(b *testing.B) (string, *http.Client, string) {
	bin := testenv.Binary(b, "github.com/homeostat/homeostat/cmd/homeostat")
	dir := b.TempDir()
	cmd := exec.Command(bin, "up", "--no-agent", "--data-dir", dir, "--listen", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0",
		"--node-name", "bench-console")
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=", "HOMEOSTAT_SERVER=", "KUBECONFIG=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var api string
	select {
	case api = <-urls:
	case err := <-done:
		b.Fatalf("homeostat up exited: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		b.Fatalf("homeostat up did not print its address\n%s", logs.String())
	}
	kc := filepath.Join(dir, "admin.kubeconfig")
	admin, err := kubeconfigClient(kc)
	if err != nil {
		b.Fatal(err)
	}
	poll.Until(b, "the API ready", 30*time.Second, func() bool {
		resp, err := admin.Get(api + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cli := func(stdin string, args ...string) string {
		c := exec.Command(bin, append([]string{"--kubeconfig", kc, "--server", api}, args...)...)
		c.Env = cmd.Env
		c.Stdin = strings.NewReader(stdin)
		o, err := c.Output()
		if err != nil {
			b.Fatalf("homeostat %v: %v", args, err)
		}
		return string(o)
	}
	cli(`apiVersion: v1
kind: Namespace
metadata: {name: bench}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bench-admin}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bench-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: bench-admin, namespace: default}]
`, "apply", "-f", "-")
	return api, admin, strings.TrimSpace(cli("", "token", "create", "bench-admin", "--ttl", "1h"))
}

// writeAll runs n requests with a few workers, trying each again while
// the API sheds load (429, 503) or the connection fails.
func writeAll(b *testing.B, n int, do func(i int) (int, error)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				ok := poll.Within(time.Minute, func() bool {
					code, err := do(i)
					if err == nil && code < 300 {
						return true
					}
					if err == nil && code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable && code != http.StatusConflict {
						failed.Store(fmt.Sprintf("request %d: %d", i, code))
						return true
					}
					return false
				})
				if !ok {
					failed.Store(fmt.Sprintf("request %d never went through", i))
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
}

func send(c *http.Client, method, url, contentType, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	return c.Do(req)
}

func createPods(b *testing.B, api string, admin *http.Client) {
	start := time.Now()
	writeAll(b, benchPods, func(i int) (int, error) {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%05d","labels":{"app":"bench"}},`+
			`"spec":{"schedulerName":"nobody","containers":[{"name":"c","command":["sleep","3600"]}]}}`, i)
		resp, err := send(admin, http.MethodPost, api+"/api/v1/namespaces/bench/pods", "application/json", body)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusConflict {
			return http.StatusCreated, nil // an earlier attempt landed
		}
		return resp.StatusCode, nil
	})
	b.Logf("%d pods created in %s", benchPods, time.Since(start).Round(time.Millisecond))
}

// burst changes the status reason of the first pods and returns the
// highest revision the writes were answered with.
func burst(b *testing.B, api string, admin *http.Client, reason string) int64 {
	var last atomic.Int64
	writeAll(b, benchBurst, func(i int) (int, error) {
		resp, err := send(admin, http.MethodPatch, fmt.Sprintf("%s/api/v1/namespaces/bench/pods/p-%05d/status", api, i),
			"application/merge-patch+json", fmt.Sprintf(`{"status":{"reason":%q}}`, reason))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var o struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		if resp.StatusCode < 300 {
			if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
				return 0, err
			}
			rv, _ := strconv.ParseInt(o.Metadata.ResourceVersion, 10, 64)
			for {
				cur := last.Load()
				if rv <= cur || last.CompareAndSwap(cur, rv) {
					break
				}
			}
		}
		return resp.StatusCode, nil
	})
	return last.Load()
}
