package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
)

type watchStream struct {
	t      *testing.T
	events chan object.WatchEvent
}

func openWatch(t *testing.T, url string) *watchStream {
	t.Helper()
	return openWatchAccepting(t, url, "")
}

// openWatchAccepting opens a watch asking for the media type accept ("" for none).
func openWatchAccepting(t *testing.T, url, accept string) *watchStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := admin(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch %s: HTTP %d", url, resp.StatusCode)
	}
	w := &watchStream{t: t, events: make(chan object.WatchEvent, 100)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev object.WatchEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				w.events <- ev
			}
		}
	}()
	return w
}

func (w *watchStream) next(typ, name string) object.Object {
	w.t.Helper()
	var o object.Object
	_ = json.Unmarshal(w.nextRaw(typ, name), &o)
	return o
}

// nextRaw returns the next event's object as sent, which must be of type
// typ and named name.
func (w *watchStream) nextRaw(typ, name string) json.RawMessage {
	w.t.Helper()
	select {
	case ev := <-w.events:
		var o object.Object
		_ = json.Unmarshal(ev.Object, &o)
		if ev.Type != typ || o.Metadata.Name != name {
			w.t.Fatalf("got %s %s, want %s %s", ev.Type, o.Metadata.Name, typ, name)
		}
		return ev.Object
	case <-time.After(10 * time.Second):
		w.t.Fatalf("no watch event, want %s %s", typ, name)
	}
	return nil
}

// Watches of a kind share each change's decoding and JSON: what each sends
// is the object as a GET reads it, and a watch that asks for Tables still
// gets Tables.
func TestWatchesSendObjectsAsRead(t *testing.T) {
	base := startAPI(t, conn(t))
	pods := base + "/api/v1/namespaces/default/pods"
	all := openWatch(t, base+"/api/v1/pods?watch=1")
	ns := openWatch(t, pods+"?watch=1")
	tables := openWatchAccepting(t, pods+"?watch=1", "application/json;as=Table;g=meta.k8s.io;v=v1")
	same := func(what string, sent json.RawMessage) {
		t.Helper()
		var got, want any
		read := call(t, "GET", pods+"/a", "", "")
		if err := json.Unmarshal(sent, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(read.body, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s sent %s, a GET reads %s", what, sent, read.body)
		}
	}
	mustCode(t, call(t, "POST", pods, "", `{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`), http.StatusCreated, "")
	same("the watch of every namespace", all.nextRaw(object.Added, "a"))
	same("the watch of the namespace", ns.nextRaw(object.Added, "a"))
	mustCode(t, call(t, "PATCH", pods+"/a", "application/merge-patch+json", `{"metadata":{"labels":{"x":"1"}}}`), http.StatusOK, "")
	same("the watch of every namespace", all.nextRaw(object.Modified, "a"))
	same("the watch of the namespace", ns.nextRaw(object.Modified, "a"))
	for _, typ := range []string{object.Added, object.Modified} {
		var tb struct {
			Kind string
			Rows []struct{ Cells []any }
		}
		if err := json.Unmarshal(tables.nextRaw(typ, ""), &tb); err != nil || tb.Kind != "Table" || len(tb.Rows) != 1 || tb.Rows[0].Cells[0] != "a" {
			t.Fatalf("%s to a watch of Tables: %+v (%v)", typ, tb, err)
		}
	}
}

func TestWatchStreamResumeAndGone(t *testing.T) {
	c := conn(t)
	base := startAPI(t, c)
	pods := base + "/api/v1/namespaces/default/pods"
	pod := func(name string) string {
		return `{"metadata":{"name":"` + name + `","labels":{"app":"w"}},"spec":{"containers":[{"name":"c","command":["x"]}]}}`
	}
	mustCode(t, call(t, "POST", pods, "", pod("a")), http.StatusCreated, "")

	w := openWatch(t, pods+"?watch=1")
	w.next(object.Added, "a")
	created := call(t, "POST", pods, "", pod("b"))
	w.next(object.Added, "b")
	mustCode(t, call(t, "PATCH", pods+"/b", "application/merge-patch+json", `{"metadata":{"labels":{"x":"1"}}}`), http.StatusOK, "")
	w.next(object.Modified, "b")
	mustCode(t, call(t, "DELETE", pods+"/a", "", ""), http.StatusOK, "")
	w.next(object.Deleted, "a")

	// A watch filtered by labels sees an object leave the selection as DELETED.
	sel := openWatch(t, pods+"?watch=true&labelSelector=x%3D1")
	sel.next(object.Added, "b")
	mustCode(t, call(t, "PATCH", pods+"/b", "application/merge-patch+json", `{"metadata":{"labels":{"x":"2"}}}`), http.StatusOK, "")
	sel.next(object.Deleted, "b")

	// Resuming from the create of b replays what followed, delete included.
	resumed := openWatch(t, pods+"?watch=1&resourceVersion="+created.obj.Metadata.ResourceVersion)
	resumed.next(object.Deleted, "a")
	resumed.next(object.Modified, "b")

	// Once the tombstone of a is compacted, resuming from before it is 410 Gone.
	st, err := c.Store(context.Background(), bus.StoreSpec{Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := st.Compact(context.Background(), -time.Second); err != nil || n != 1 {
		t.Fatalf("compact: %d, %v", n, err)
	}
	r := call(t, "GET", pods+"?watch=1&resourceVersion="+created.obj.Metadata.ResourceVersion, "", "")
	mustCode(t, r, http.StatusGone, object.ReasonGone)
	// A fresh list gives a resourceVersion that resumes fine.
	var l object.List
	_ = json.Unmarshal(call(t, "GET", pods, "", "").body, &l)
	if _, err := strconv.Atoi(l.Metadata.ResourceVersion); err != nil {
		t.Fatalf("list resourceVersion %q", l.Metadata.ResourceVersion)
	}
	again := openWatch(t, pods+"?watch=1&resourceVersion="+l.Metadata.ResourceVersion)
	mustCode(t, call(t, "POST", pods, "", pod("c")), http.StatusCreated, "")
	again.next(object.Added, "c")
}

// With allowWatchBookmarks, a watch says when it has caught up: after the
// initial events (annotated as their end, as Kubernetes does), and after
// the backlog of a resumed watch, at a resourceVersion to resume from.
func TestWatchBookmarks(t *testing.T) {
	base := startAPI(t, conn(t))
	pods := base + "/api/v1/namespaces/default/pods"
	pod := func(name string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`
	}
	first := call(t, "POST", pods, "", pod("a"))
	mustCode(t, first, http.StatusCreated, "")
	mustCode(t, call(t, "POST", pods, "", pod("b")), http.StatusCreated, "")

	w := openWatch(t, pods+"?watch=1&allowWatchBookmarks=true")
	w.next(object.Added, "a")
	w.next(object.Added, "b")
	bm := w.next(object.Bookmark, "")
	if bm.Metadata.Annotations["k8s.io/initial-events-end"] != "true" || bm.Kind != "Pod" {
		t.Fatalf("bookmark after the initial events: %+v", bm)
	}
	mustCode(t, call(t, "POST", pods, "", pod("c")), http.StatusCreated, "")
	w.next(object.Added, "c")

	// A resumed watch sends its backlog, then a bookmark that is not the
	// end of initial events, at the revision of the last change.
	resumed := openWatch(t, pods+"?watch=1&allowWatchBookmarks=true&resourceVersion="+first.obj.Metadata.ResourceVersion)
	resumed.next(object.Added, "b")
	resumed.next(object.Added, "c")
	bm = resumed.next(object.Bookmark, "")
	if _, ok := bm.Metadata.Annotations["k8s.io/initial-events-end"]; ok {
		t.Fatalf("a resumed watch's bookmark marks initial events: %+v", bm)
	}
	got, _ := strconv.ParseUint(bm.Metadata.ResourceVersion, 10, 64)
	first64, _ := strconv.ParseUint(first.obj.Metadata.ResourceVersion, 10, 64)
	if got <= first64 {
		t.Fatalf("bookmark at revision %d, not past the backlog from %d", got, first64)
	}

	// Without the parameter, no bookmarks: the next event is the next change.
	plain := openWatch(t, pods+"?watch=1")
	plain.next(object.Added, "a")
	plain.next(object.Added, "b")
	plain.next(object.Added, "c")
	mustCode(t, call(t, "POST", pods, "", pod("d")), http.StatusCreated, "")
	plain.next(object.Added, "d")
}

// A GET reads as Kubernetes' does: "0" any version, none or N the latest;
// a resourceVersion that is no revision is a 400 naming it.
func TestGetByResourceVersion(t *testing.T) {
	base := startAPI(t, conn(t))
	pods := base + "/api/v1/namespaces/default/pods"
	created := call(t, "POST", pods, "", `{"metadata":{"name":"g"},"spec":{"containers":[{"name":"c","command":["x"]}]}}`)
	mustCode(t, created, http.StatusCreated, "")
	for _, rv := range []string{"", "0", created.obj.Metadata.ResourceVersion} {
		r := call(t, "GET", pods+"/g?resourceVersion="+rv, "", "")
		mustCode(t, r, http.StatusOK, "")
		if r.obj.Metadata.ResourceVersion != created.obj.Metadata.ResourceVersion {
			t.Errorf("GET with resourceVersion %q: %s, want %s", rv, r.obj.Metadata.ResourceVersion, created.obj.Metadata.ResourceVersion)
		}
	}
	r := call(t, "GET", pods+"/g?resourceVersion=abc", "", "")
	mustCode(t, r, http.StatusBadRequest, object.ReasonBadRequest)
	if !strings.Contains(string(r.body), `resourceVersion \"abc\"`) {
		t.Errorf("GET with resourceVersion abc: %s; want the message to name it", r.body)
	}
}
