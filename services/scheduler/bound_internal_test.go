package scheduler

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// A bound spec is the stored spec with its node, read as the spec the
// scheduler would have encoded whole; a spec it cannot add the node to
// safely is left for the caller to encode.
func TestBoundSpec(t *testing.T) {
	cases := []struct {
		name, spec, node string
		want             string // "" when boundSpec declines
	}{
		{"a stored spec", `{"containers":[{"name":"web","image":"nginx"}],"restartPolicy":"Always"}`, "n1",
			`{"containers":[{"name":"web","image":"nginx"}],"restartPolicy":"Always","nodeName":"n1"}`},
		{"an empty spec", `{}`, "n1", `{"nodeName":"n1"}`},
		{"spaces around", " { \"containers\":[] } \n", "n1", `{"containers":[],"nodeName":"n1"}`},
		{"a name to escape", `{"containers":[]}`, `a"b`, `{"containers":[],"nodeName":"a\"b"}`},
		{"a name in another case", `{"containers":[]}`, "N1", `{"containers":[],"nodeName":"N1"}`},
		{"nodeName given empty", `{"containers":[],"nodeName":""}`, "n1", ""},
		{"nodeName in a value", `{"containers":[{"name":"nodeName"}]}`, "n1", ""},
		{"nodeName in another case", `{"containers":[],"NodeName":""}`, "n1", ""},
		{"nodeName escaped", `{"containers":[],"node\u004eame":""}`, "n1", ""},
		{"any escape", `{"containers":[{"name":"a\"b"}]}`, "n1", ""},
		{"not an object", `[1]`, "n1", ""},
		{"null", `null`, "n1", ""},
		{"nothing", ``, "n1", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := boundSpec([]byte(c.spec), c.node)
			if c.want == "" {
				if ok {
					t.Fatalf("bound %s as %s; want it left to the caller", c.spec, got)
				}
				return
			}
			if !ok || string(got) != c.want {
				t.Fatalf("got %s (%v), want %s", got, ok, c.want)
			}
			var spec kinds.PodSpec
			if err := json.Unmarshal(got, &spec); err != nil || spec.NodeName != c.node {
				t.Fatalf("%s reads as node %q (%v)", got, spec.NodeName, err)
			}
			// Every reader of a pod's node reads this one.
			o := &object.Object{Spec: got}
			decoded, err := kinds.DecodePodSpec(o)
			if n := kinds.BoundNode(o); n != c.node || err != nil || decoded.NodeName != c.node {
				t.Fatalf("%s is bound to %q read alone, %q decoded (%v)", got, n, decoded.NodeName, err)
			}
		})
	}
}

// The status a bind writes is the pod's with PodScheduled true and its
// phase Pending, made again when the second or the status it came with
// changes, and never the same bytes as a caller may change.
func TestScheduledStatuses(t *testing.T) {
	pod := func(status string) *kinds.Pod {
		o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "p"}}
		if status != "" {
			o.Status = []byte(status)
		}
		p := &kinds.Pod{Object: o, Spec: &kinds.PodSpec{}}
		if err := o.DecodeStatus(&p.Status); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	read := func(b []byte) kinds.PodStatus {
		t.Helper()
		var st kinds.PodStatus
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	var c scheduledStatuses
	fresh := pod("")
	first, err := c.status(fresh, t0)
	if err != nil {
		t.Fatal(err)
	}
	st := read(first)
	if st.Phase != kinds.PodPending || len(st.Conditions) != 1 || st.Conditions[0].Type != kinds.PodScheduled ||
		st.Conditions[0].Status != object.ConditionTrue || !st.Conditions[0].LastTransitionTime.Equal(t0) {
		t.Fatalf("a fresh pod bound at %s has status %s", t0, first)
	}
	again, _ := c.status(pod(""), t0)
	if &again[0] != &first[0] {
		t.Fatal("a second pod with the same status in the same second made its status again")
	}
	if cap(again) != len(again) {
		t.Fatalf("shared status has room to append in place (len %d, cap %d)", len(again), cap(again))
	}
	later, _ := c.status(pod(""), t0.Add(time.Second))
	if !read(later).Conditions[0].LastTransitionTime.Equal(t0.Add(time.Second)) {
		t.Fatalf("a bind a second later wrote %s", later)
	}
	// A pod found unschedulable before, bound in the same second, keeps
	// its phase and moves its condition to true, as the one encoded whole.
	tried := pod(`{"phase":"Pending","message":"waited","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","lastTransitionTime":"2026-11-29T09:00:00Z"}]}`)
	got, _ := c.status(tried, t0.Add(time.Second))
	want, err := scheduledStatus(tried.Status, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || !reflect.DeepEqual(read(got), read(want)) || read(got).Conditions[0].Status != object.ConditionTrue || read(got).Message != "waited" {
		t.Fatalf("an unschedulable pod bound as %s, want %s", got, want)
	}
	if tried.Status.Conditions[0].Status != object.ConditionFalse {
		t.Fatal("binding changed the decoded status it was given")
	}
}
