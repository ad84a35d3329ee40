package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/services/api"
	"github.com/homeostat/homeostat/testenv/poll"
)

// listsFrom reads how many lists of resource the API (in this process)
// has answered from source, cache or store, from its metrics.
func listsFrom(t *testing.T, resource, source string) int {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "homeostat_api_lists_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["resource"] == resource && labels["source"] == source {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	return 0
}

// TestListsFromMemoryHoldEveryAcknowledgedWrite: once a kind's cache has
// synced, lists are answered from the API's memory, and each still holds
// every write acknowledged before it began (creates, updates and deletes
// made through the API just before it) and nothing of another namespace,
// whole, in pages, and by label, while another writer keeps rewriting the
// same objects.
func TestListsFromMemoryHoldEveryAcknowledgedWrite(t *testing.T) {
	c := conn(t)
	base := startAPI(t, c)
	cms := base + "/api/v1/namespaces/default/configmaps"
	list := func(query string) corev1.ConfigMapList {
		t.Helper()
		r := call(t, "GET", cms+query, "", "")
		mustCode(t, r, http.StatusOK, "")
		var l corev1.ConfigMapList
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatalf("list%s: %v", query, err)
		}
		return l
	}
	// An object of another namespace is in the cache, never in these lists.
	mustCode(t, call(t, "POST", base+"/api/v1/namespaces/kube-public/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"elsewhere"}}`), http.StatusCreated, "")
	// The first list starts the cache; later ones come from it once synced.
	poll.Until(t, "a list answered from memory", 20*time.Second, func() bool {
		list("")
		return listsFrom(t, "configmaps", "cache") > 0
	})

	live := map[string]int{} // name: resourceVersion acknowledged
	write := func(method, url, body string, want int) {
		t.Helper()
		ct := "application/json"
		if method == "PATCH" {
			ct = "application/merge-patch+json"
		}
		r := call(t, method, url, ct, body)
		mustCode(t, r, want, "")
		var cm corev1.ConfigMap
		if err := json.Unmarshal(r.body, &cm); err != nil {
			t.Fatal(err)
		}
		rv, _ := strconv.Atoi(cm.ResourceVersion)
		live[cm.Name] = rv
	}
	check := func(round int, what string, l corev1.ConfigMapList, want func(name string) bool) {
		t.Helper()
		got := map[string]int{}
		for _, cm := range l.Items {
			rv, _ := strconv.Atoi(cm.ResourceVersion)
			got[cm.Name] = rv
		}
		for name, rv := range live {
			if !want(name) {
				continue
			}
			if got[name] < rv {
				t.Fatalf("round %d, %s: %s at %d, acknowledged at %d (listed: %v)", round, what, name, got[name], rv, got)
			}
		}
		for name := range got {
			if _, ok := live[name]; !ok || !want(name) {
				t.Fatalf("round %d, %s: %s listed, deleted or not selected", round, what, name)
			}
		}
	}
	// Another writer keeps rewriting the same objects, so that the cache's
	// watch passes over messages replaced before it reaches them.
	store, err := c.Store(context.Background(), bus.StoreSpec{Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for n := 0; wctx.Err() == nil; n++ {
			cur, err := store.Get(wctx, fmt.Sprintf("default.cm%02d", n%30))
			if err != nil {
				continue // not made yet, or deleted
			}
			next := cur.Clone()
			next.Metadata.Annotations = map[string]string{"n": strconv.Itoa(n)}
			_, _ = store.Update(wctx, next, bus.UpdateOptions{Current: cur})
		}
	}()
	defer func() { stop(); writer.Wait() }()
	group := func(name string) string { n, _ := strconv.Atoi(name[2:]); return strconv.Itoa(n % 3) }
	fromCache := listsFrom(t, "configmaps", "cache")
	for i := range 30 {
		name := fmt.Sprintf("cm%02d", i)
		write("POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","labels":{"g":"`+group(name)+`"}},"data":{"v":"0"}}`, http.StatusCreated)
		if i%3 == 2 {
			write("PATCH", cms+fmt.Sprintf("/cm%02d", i-1), `{"data":{"v":"`+strconv.Itoa(i)+`"}}`, http.StatusOK)
		}
		if i%5 == 4 {
			gone := fmt.Sprintf("cm%02d", i-4)
			mustCode(t, call(t, "DELETE", cms+"/"+gone, "", ""), http.StatusOK, "")
			delete(live, gone)
		}
		all := func(string) bool { return true }
		check(i, "whole", list(""), all)
		var paged corev1.ConfigMapList
		for q := "?limit=4"; ; {
			page := list(q)
			paged.Items = append(paged.Items, page.Items...)
			if page.Continue == "" {
				break
			}
			q = "?limit=4&continue=" + page.Continue
		}
		check(i, "in pages", paged, all)
		check(i, "g=1", list("?labelSelector=g%3D1"), func(name string) bool { return group(name) == "1" })
	}
	// Lists answered from the store are correct too; these rounds are
	// about the cache, so most of them must have come from it.
	if n := listsFrom(t, "configmaps", "cache") - fromCache; n < 30 {
		t.Fatalf("%d of the rounds' lists were answered from memory", n)
	}
	// Limited lists alone start no cache: they read their pages.
	for range 3 {
		mustCode(t, call(t, "GET", base+"/api/v1/namespaces/default/secrets?limit=1", "", ""), http.StatusOK, "")
	}
	if n := listsFrom(t, "secrets", "cache"); n != 0 {
		t.Fatalf("limited lists of secrets answered from memory: %d", n)
	}
	// Events expire without a message a watch would see: their lists
	// always read the store.
	for range 3 {
		mustCode(t, call(t, "GET", base+"/api/v1/namespaces/default/events", "", ""), http.StatusOK, "")
	}
	if n := listsFrom(t, "events", "cache"); n != 0 || listsFrom(t, "events", "store") < 3 {
		t.Fatalf("lists of events answered from memory: %d", n)
	}
}

// gauge reads a gauge of the API's metrics (in this process).
func gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// listed lists url and fails unless it answers with the ConfigMap a.
func listed(t *testing.T, url string) {
	t.Helper()
	r := call(t, "GET", url, "", "")
	mustCode(t, r, http.StatusOK, "")
	var l corev1.ConfigMapList
	if err := json.Unmarshal(r.body, &l); err != nil || len(l.Items) != 1 || l.Items[0].Name != "a" {
		t.Fatalf("list: %v %s", err, r.body)
	}
}

// TestIdleListCachesAreDropped: a kind's list cache that answers nothing
// for the API's ListCacheIdle is dropped; the next list of the kind reads
// the store and starts it again, and lists come from memory once more.
func TestIdleListCachesAreDropped(t *testing.T) {
	base := startAPI(t, conn(t), func(c *api.Config) { c.ListCacheIdle = 200 * time.Millisecond })
	cms := base + "/api/v1/namespaces/default/configmaps"
	mustCode(t, call(t, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`), http.StatusCreated, "")
	fromMemory := func() bool {
		before := listsFrom(t, "configmaps", "cache")
		listed(t, cms)
		return listsFrom(t, "configmaps", "cache") > before
	}
	poll.Until(t, "a list answered from memory", 20*time.Second, fromMemory)
	poll.Until(t, "every idle cache dropped", 20*time.Second, func() bool { return gauge(t, "homeostat_api_list_caches") == 0 })
	fromStore := listsFrom(t, "configmaps", "store")
	listed(t, cms)
	if listsFrom(t, "configmaps", "store") != fromStore+1 {
		t.Fatal("the first list after its cache was dropped was not read from the store")
	}
	poll.Until(t, "lists answered from memory again", 20*time.Second, fromMemory)
}
