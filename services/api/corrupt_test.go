package api_test

// Corrupt values through the API: stored values that are not objects of
// their key stop no request, are reported, and can be repaired.

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/schemas"
	"github.com/homeostat/homeostat/testenv/poll"
)

// corruptCase is a kind whose store gets corrupt values: where its
// collection is served, the namespace its objects live in ("" for a
// cluster-scoped kind), and how to write a good object of it.
type corruptCase struct {
	group, plural string
	coll          string // collection URL path
	ns            string
	good          func(name string) string
}

// key is the store key of a name of this kind.
func (tc corruptCase) key(name string) string { return object.Key(tc.ns, name) }

// TestCorruptValuesThroughTheAPI: values that are not objects of their key,
// written straight into a kind's store, stop nothing: lists serve every
// good object and warn about each bad key, GET refuses a bad key with a
// pointer to the raw subresource, raw serves the bytes, DELETE removes the
// value, the name can be used again, and each bad key gets an Event.
func TestCorruptValuesThroughTheAPI(t *testing.T) {
	c := conn(t)
	base := startAPI(t, c)
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []corruptCase{
		{"apps", "deployments", "/apis/apps/v1/namespaces/default/deployments", "default",
			func(name string) string { return deploy(name, "t") }},
		{"", "namespaces", "/api/v1/namespaces", "",
			func(name string) string {
				return `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"}}`
			}},
	} {
		t.Run(tc.plural, func(t *testing.T) {
			res := reg.MustLookup(tc.group, tc.plural)
			st, err := c.Store(context.Background(), reconcile.KindOf(res).StoreSpec())
			if err != nil {
				t.Fatal(err)
			}
			coll := base + tc.coll
			goods := []string{"good-a", "good-b"}
			for _, g := range goods {
				mustCode(t, call(t, "POST", coll, "", tc.good(g)), http.StatusCreated, "")
			}
			bad, revs := tc.putCorruptValues(t, st)
			tc.checkListWarns(t, coll, goods, bad)
			checkGetAndRawOfCorrupt(t, coll, bad, revs)
			// An Event with reason CorruptObject names each bad key (flushed once a second).
			poll.Until(t, "CorruptObject events for every bad key", 20*time.Second, func() bool {
				return tc.eventsNameEvery(base, res.Kind, bad)
			})
			tc.deleteAndReuse(t, coll, bad)
			l := mustSend(t, "GET", coll, "", "")
			if l.code != http.StatusOK || len(l.header.Values("Warning")) != 0 {
				t.Fatalf("LIST after the repairs: HTTP %d, warnings %q", l.code, l.header.Values("Warning"))
			}
		})
	}
}

// putCorruptValues writes three bad values straight into the kind's store:
// bytes that are not JSON, null, and a valid object of another name than
// its key. It returns them by name, with the revision each was written at.
func (tc corruptCase) putCorruptValues(t *testing.T, st *bus.Store) (map[string][]byte, map[string]uint64) {
	t.Helper()
	// A valid object, but of another name than its key.
	var other map[string]any
	if err := json.Unmarshal([]byte(tc.good("someone-else")), &other); err != nil {
		t.Fatal(err)
	}
	if tc.ns != "" {
		other["metadata"].(map[string]any)["namespace"] = tc.ns
	}
	misnamed, _ := json.Marshal(other)
	bad := map[string][]byte{
		"bad-json":     []byte(`{not json`),
		"bad-null":     []byte(`null`),
		"bad-misnamed": misnamed,
	}
	revs := map[string]uint64{}
	for name, data := range bad {
		rev, err := st.PutRaw(context.Background(), tc.key(name), data)
		if err != nil {
			t.Fatalf("PutRaw %s: %v", tc.key(name), err)
		}
		revs[name] = rev
	}
	return bad, revs
}

// checkListWarns checks that a LIST beside corrupt values answers 200 with
// every good object, no bad one, and one Warning header of the form
// 299 - "..." per bad key.
func (tc corruptCase) checkListWarns(t *testing.T, coll string, goods []string, bad map[string][]byte) {
	t.Helper()
	l := mustSend(t, "GET", coll, "", "")
	if l.code != http.StatusOK {
		t.Fatalf("LIST with corrupt values: HTTP %d %s", l.code, l.body)
	}
	var list object.List
	if err := json.Unmarshal(l.body, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list.Items {
		names = append(names, o.Metadata.Name)
	}
	for _, g := range goods {
		if !slices.Contains(names, g) {
			t.Errorf("LIST left out the good object %s: items %v", g, names)
		}
	}
	for name := range bad {
		if slices.Contains(names, name) {
			t.Errorf("LIST served the corrupt key %s", name)
		}
	}
	warnings := l.header.Values("Warning")
	if len(warnings) != len(bad) {
		t.Errorf("LIST: %d Warning headers, want one per bad key (%d): %q", len(warnings), len(bad), warnings)
	}
	for name := range bad {
		n := 0
		for _, w := range warnings {
			if strings.Contains(w, tc.key(name)) {
				n++
				if !strings.HasPrefix(w, `299 - "`) || !strings.HasSuffix(w, `"`) {
					t.Errorf("Warning %q is not of the form 299 - \"...\"", w)
				}
			}
		}
		if n != 1 {
			t.Errorf("LIST: %d Warning headers name %s, want 1: %q", n, tc.key(name), warnings)
		}
	}
}

// checkGetAndRawOfCorrupt checks that a GET of each bad name answers 500
// with a CorruptObject cause and a pointer to the raw subresource, and that
// raw serves the exact bytes with their revision.
func checkGetAndRawOfCorrupt(t *testing.T, coll string, bad map[string][]byte, revs map[string]uint64) {
	t.Helper()
	for name, data := range bad {
		u := coll + "/" + name
		// GET: 500 pointing at raw, cause CorruptObject.
		g := mustSend(t, "GET", u, "", "")
		if g.code != http.StatusInternalServerError {
			t.Fatalf("GET %s: HTTP %d %s, want 500", name, g.code, g.body)
		}
		gs := statusOf(t, g)
		if !strings.Contains(gs.Message, "raw") || gs.Details == nil || len(gs.Details.Causes) == 0 ||
			gs.Details.Causes[0].Type != "CorruptObject" || gs.Details.Name != name {
			t.Errorf("GET %s: Status %s, want a message naming the raw subresource and a CorruptObject cause", name, g.body)
		}
		// raw: the exact bytes and their revision.
		r := mustSend(t, "GET", u+"/raw", "", "")
		if r.code != http.StatusOK || string(r.body) != string(data) {
			t.Errorf("GET %s/raw: HTTP %d %q, want 200 %q", name, r.code, r.body, data)
		}
		if got := r.header.Get("X-Resource-Version"); got != strconv.FormatUint(revs[name], 10) {
			t.Errorf("GET %s/raw: X-Resource-Version %q, want %d", name, got, revs[name])
		}
	}
}

// eventsNameEvery reports whether the default namespace's Events hold, for
// every bad name, a CorruptObject Event about an object of this kind and
// name whose message names its key: the condition polled for, so a failed
// request is just not yet.
func (tc corruptCase) eventsNameEvery(base, kind string, bad map[string][]byte) bool {
	a, err := send("GET", base+"/api/v1/namespaces/default/events", "", "")
	if err != nil || a.code != http.StatusOK {
		return false
	}
	var events object.List
	if json.Unmarshal(a.body, &events) != nil {
		return false
	}
	seen := map[string]bool{}
	for _, ev := range events.Items {
		spec, err := kinds.EventOf(ev)
		if err != nil || spec.Reason != "CorruptObject" ||
			spec.InvolvedObject.Kind != kind || spec.InvolvedObject.Namespace != tc.ns {
			continue
		}
		if strings.Contains(spec.Message, tc.key(spec.InvolvedObject.Name)) {
			seen[spec.InvolvedObject.Name] = true
		}
	}
	for name := range bad {
		if !seen[name] {
			return false
		}
	}
	return true
}

// deleteAndReuse checks that a DELETE of each bad name answers 200 with a
// Status of status Success, that the name and its raw subresource are then
// gone (404), and that a good object can be created under the name again.
func (tc corruptCase) deleteAndReuse(t *testing.T, coll string, bad map[string][]byte) {
	t.Helper()
	for name := range bad {
		u := coll + "/" + name
		// DELETE: 200 Status Success; then 404; then the name is free.
		d := mustSend(t, "DELETE", u, "", "")
		if d.code != http.StatusOK {
			t.Fatalf("DELETE %s: HTTP %d %s, want 200", name, d.code, d.body)
		}
		if ds := statusOf(t, d); ds.Status != "Success" {
			t.Errorf("DELETE %s: %s, want a Status of status Success", name, d.body)
		}
		mustCode(t, call(t, "GET", u, "", ""), http.StatusNotFound, object.ReasonNotFound)
		mustCode(t, call(t, "GET", u+"/raw", "", ""), http.StatusNotFound, object.ReasonNotFound)
		mustCode(t, call(t, "POST", coll, "", tc.good(name)), http.StatusCreated, "")
		mustCode(t, call(t, "GET", u, "", ""), http.StatusOK, "")
	}
}
