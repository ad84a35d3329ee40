package fieldmanager_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/fieldmanager"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/openapi"
	"github.com/homeostat/homeostat/schemas"
)

func managers(t *testing.T) *fieldmanager.Managers {
	t.Helper()
	reg, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	return fieldmanager.New(openapi.NewCache(reg))
}

func pod(t *testing.T, doc string) *object.Object {
	t.Helper()
	o, err := object.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

type entry struct {
	Manager     string          `json:"manager"`
	Operation   string          `json:"operation"`
	Subresource string          `json:"subresource"`
	Fields      json.RawMessage `json:"fieldsV1"`
}

func entries(t *testing.T, o *object.Object) map[string]entry {
	t.Helper()
	var es []entry
	if len(o.Metadata.ManagedFields) > 0 {
		if err := json.Unmarshal(o.Metadata.ManagedFields, &es); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]entry{}
	for _, e := range es {
		out[e.Manager+"/"+e.Subresource] = e
	}
	return out
}

const created = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default","labels":{"app":"web"}},
 "spec":{"containers":[{"name":"web","command":["sleep","60"]}]}}`

// TestTrackRecordsEachWriter: a create, a binding and a status write by
// three writers are each recorded under the writer, the status write with
// subresource status; a write that changes nothing changes no managed
// field, so the bus still sees it as the no-op it is.
func TestTrackRecordsEachWriter(t *testing.T) {
	m := managers(t)
	p := m.Track("homeostat-controllers", "", nil, pod(t, created))
	got := entries(t, p)
	c, ok := got["homeostat-controllers/"]
	if !ok || c.Operation != "Update" || !strings.Contains(string(c.Fields), `"f:containers"`) || !strings.Contains(string(c.Fields), `"f:app"`) {
		t.Fatalf("a create is recorded under its writer with every field it set: %+v", got)
	}

	bound := p.Clone()
	bound.Spec = json.RawMessage(`{"containers":[{"name":"web","command":["sleep","60"]}],"nodeName":"n1"}`)
	bound = m.Track("homeostat-scheduler", subresource(p, bound), p, bound)
	got = entries(t, bound)
	if s, ok := got["homeostat-scheduler/"]; !ok || !strings.Contains(string(s.Fields), `"f:nodeName"`) || strings.Contains(string(s.Fields), `"f:containers"`) {
		t.Fatalf("a binding is recorded as the scheduler's nodeName alone: %+v", got)
	}
	if _, ok := got["homeostat-controllers/"]; !ok {
		t.Fatalf("the creator's entry is kept: %+v", got)
	}

	running := bound.Clone()
	running.Status = json.RawMessage(`{"phase":"Running"}`)
	running = m.Track("homeostat-agent", subresource(bound, running), bound, running)
	got = entries(t, running)
	if a, ok := got["homeostat-agent/status"]; !ok || !strings.Contains(string(a.Fields), `"f:phase"`) {
		t.Fatalf("a status write is recorded with subresource status: %+v", got)
	}

	again := m.Track("homeostat-agent", subresource(running, running.Clone()), running, running.Clone())
	if !object.SameJSON(again.Metadata.ManagedFields, running.Metadata.ManagedFields) {
		t.Fatalf("a write that changes nothing changed the managed fields:\n%s\n%s", running.Metadata.ManagedFields, again.Metadata.ManagedFields)
	}
}

// TestTrackRemembersCreates: objects alike but for what the field manager
// strips get the same managed fields, each stamped with its own time, as
// the field manager gives them; another object gets its own; Events are
// not tracked.
func TestTrackRemembersCreates(t *testing.T) {
	m := managers(t)
	first := m.Track("homeostat-controllers", "", nil, pod(t, created))
	other := pod(t, strings.Replace(created, `"web-1"`, `"web-2"`, 1))
	other.Metadata.UID = "another"
	second := m.Track("homeostat-controllers", "", nil, other)
	a, b := entries(t, first)["homeostat-controllers/"], entries(t, second)["homeostat-controllers/"]
	if len(a.Fields) == 0 || string(a.Fields) != string(b.Fields) || len(entries(t, second)) != 1 {
		t.Fatalf("pods alike were tracked apart:\n%s\n%s", first.Metadata.ManagedFields, second.Metadata.ManagedFields)
	}
	if !strings.Contains(string(second.Metadata.ManagedFields), `"time":"20`) {
		t.Fatalf("a remembered create has no time: %s", second.Metadata.ManagedFields)
	}
	direct := m.Update("homeostat-controllers", "", nil, pod(t, strings.Replace(created, `"web-1"`, `"web-3"`, 1)))
	if d := entries(t, direct)["homeostat-controllers/"]; string(d.Fields) != string(b.Fields) {
		t.Fatalf("a remembered create differs from the field manager's answer:\n%s\n%s", d.Fields, b.Fields)
	}
	sidecar := m.Track("homeostat-controllers", "", nil, pod(t, strings.Replace(created, `"name":"web","command"`, `"name":"sidecar","command"`, 1)))
	if s := entries(t, sidecar)["homeostat-controllers/"]; !strings.Contains(string(s.Fields), `sidecar`) {
		t.Fatalf("another pod was given a remembered answer: %s", s.Fields)
	}
	ev := pod(t, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"default"},"reason":"Started"}`)
	if got := m.Track("homeostat-controllers", "", nil, ev); len(got.Metadata.ManagedFields) != 0 {
		t.Fatalf("an Event was tracked: %s", got.Metadata.ManagedFields)
	}
}

// TestTrackKeepsWhatItCannotType: a kind with no schema keeps its managed
// fields, and the write goes on; one with none gets none (not fields of a
// type deduced from the object).
func TestTrackKeepsWhatItCannotType(t *testing.T) {
	m := managers(t)
	o := pod(t, `{"apiVersion":"example.com/v1","kind":"Unknown","metadata":{"name":"x","managedFields":[{"manager":"a","operation":"Update"}]}}`)
	before := string(o.Metadata.ManagedFields)
	if got := m.Track("homeostat-controllers", "", nil, o); string(got.Metadata.ManagedFields) != before {
		t.Fatalf("an untyped kind's managed fields changed: %s", got.Metadata.ManagedFields)
	}
	bare := pod(t, `{"apiVersion":"example.com/v1","kind":"Unknown","metadata":{"name":"y"},"spec":{"a":1}}`)
	if got := m.Track("homeostat-controllers", "", nil, bare); len(got.Metadata.ManagedFields) != 0 {
		t.Fatalf("an untyped kind was tracked as deduced: %s", got.Metadata.ManagedFields)
	}
}

func TestSubresource(t *testing.T) {
	base := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"d","resourceVersion":"5","labels":{"a":"b"}},"spec":{"nodeName":"n"},"status":{"phase":"Pending"}}`
	for _, tc := range []struct {
		name, next string
		create     bool
		want       string
	}{
		{name: "a create", next: base, create: true, want: ""},
		{name: "status only", next: strings.Replace(base, "Pending", "Running", 1), want: "status"},
		{name: "status and a newer revision", next: strings.Replace(strings.Replace(base, "Pending", "Running", 1), `"5"`, `"6"`, 1), want: "status"},
		{name: "status and a label", next: strings.Replace(strings.Replace(base, "Pending", "Running", 1), `"b"`, `"c"`, 1), want: ""},
		{name: "status and spec", next: strings.Replace(strings.Replace(base, "Pending", "Running", 1), `"n"`, `"m"`, 1), want: ""},
		{name: "spec only", next: strings.Replace(base, `"n"`, `"m"`, 1), want: ""},
		{name: "nothing", next: base, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live *object.Object
			if !tc.create {
				live = pod(t, base)
			}
			if got := subresource(live, pod(t, tc.next)); got != tc.want {
				t.Fatalf("Subresource = %q, want %q", got, tc.want)
			}
		})
	}
}

// subresource is what the bus tells the tracker of a write of next over
// live: "status" for one that changes the status alone.
func subresource(live, next *object.Object) string {
	if object.StatusOnly(live, next) {
		return "status"
	}
	return ""
}
