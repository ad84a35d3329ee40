package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
	"github.com/homeostat/homeostat/testenv/tcpproxy"
)

// TestClientGoInformerRelistsAfterCompaction: a client-go informer whose
// watch is cut, and whose resourceVersion is compacted away meanwhile (a
// delete it never saw included), is answered 410 Gone when it watches
// again, re-lists, and ends holding exactly what the store holds, the
// delete seen.
func TestClientGoInformerRelistsAfterCompaction(t *testing.T) {
	c := conn(t)
	base := startAPI(t, c)
	proxy, err := tcpproxy.New(strings.TrimPrefix(base, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	gone := &goneCounter{next: &http.Transport{TLSClientConfig: authority(t).ClientTLS("admin", "system:masters")}}
	cfg := &rest.Config{Host: "https://" + proxy.Addr(), Transport: gone}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm("a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	inf := factory.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	deleted := map[string]bool{}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, ok := obj.(*corev1.ConfigMap); ok {
			mu.Lock()
			deleted[m.Name] = true
			mu.Unlock()
		}
	}}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer never synced")
	}
	holds := func(names ...string) bool {
		keys := inf.GetStore().ListKeys()
		if len(keys) != len(names) {
			return false
		}
		for _, n := range names {
			if _, ok, _ := inf.GetStore().GetByKey("default/" + n); !ok {
				return false
			}
		}
		return true
	}
	poll.Until(t, "the informer to hold a", 15*time.Second, func() bool { return holds("a") })
	// z comes through the watch, so that the watch's end is not taken for
	// a failure to start (which client-go answers with a re-list anyway).
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/default/configmaps", "", `{"metadata":{"name":"z"}}`), http.StatusCreated, "")
	poll.Until(t, "the watch to deliver z", 15*time.Second, func() bool { return holds("a", "z") })

	// The watch is cut; while the informer cannot reach the API, a goes,
	// b comes, and a's tombstone is compacted away.
	proxy.Set(tcpproxy.Drop)
	rv := inf.LastSyncResourceVersion()
	mustCode(t, call(t, "DELETE", base+"/api/v1/namespaces/default/configmaps/a", "", ""), http.StatusOK, "")
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/default/configmaps", "", `{"metadata":{"name":"b"}}`), http.StatusCreated, "")
	st, err := c.Store(ctx, bus.StoreSpec{Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := st.Compact(ctx, -time.Second); err != nil || n != 1 {
		t.Fatalf("compact: %d, %v", n, err)
	}
	mustCode(t, call(t, "GET", base+"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion="+rv, "", ""), http.StatusGone, object.ReasonGone)

	proxy.Set(tcpproxy.Pass)
	poll.Until(t, "the informer to re-list and hold b and z", 60*time.Second, func() bool { return holds("b", "z") })
	if gone.count() == 0 {
		t.Fatal("the informer's watch was never answered 410 Gone")
	}
	// client-go hands events to handlers after it updates its store, so
	// the delete of a may come a moment after the store holds b and z.
	if !poll.Within(15*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return deleted["a"] }) {
		t.Fatal("the informer re-listed without telling its handler that a went")
	}
	if got := inf.LastSyncResourceVersion(); got == rv {
		t.Fatalf("the informer's resourceVersion is still %s", got)
	}
}

// goneCounter counts the watches answered 410 Gone.
type goneCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    int
}

func (g *goneCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusGone && r.URL.Query().Get("watch") != "" {
		g.mu.Lock()
		g.n++
		g.mu.Unlock()
	}
	return resp, err
}

func (g *goneCounter) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}
