package bus_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// TestIndexChanges: what a pod's change makes of the node pod index.
func TestIndexChanges(t *testing.T) {
	pod := func(node, image, phase string) *object.Object {
		o := &object.Object{APIVersion: "v1", Kind: "Pod", Metadata: object.Meta{Name: "p", Namespace: "ns", UID: "u1"}}
		o.Spec = json.RawMessage(`{"nodeName":` + strconv.Quote(node) + `,"containers":[{"name":"c","image":` + strconv.Quote(image) + `}]}`)
		o.Status = json.RawMessage(`{"phase":` + strconv.Quote(phase) + `}`)
		return o
	}
	deleting := pod("a", "v1", "Running")
	now := time.Unix(1e9, 0)
	deleting.Metadata.DeletionTimestamp = &now
	recreated := pod("a", "v1", "Pending")
	recreated.Metadata.UID = "u2"
	all := func(string) bool { return true }
	notB := func(n string) bool { return n != "b" }
	for _, tc := range []struct {
		name      string
		old, next *object.Object
		entries   func(string) bool
		want      string
	}{
		{"created unbound", nil, pod("", "v1", ""), all, "[]"},
		{"created bound", nil, pod("a", "v1", ""), all, "[a+]"},
		{"bound", pod("", "v1", ""), pod("a", "v1", ""), all, "[a+]"},
		{"its status changes", pod("a", "v1", "Pending"), pod("a", "v1", "Running"), all, "[]"},
		{"its spec changes", pod("a", "v1", "Running"), pod("a", "v2", "Running"), all, "[a+]"},
		{"being deleted", pod("a", "v1", "Running"), deleting, all, "[a+]"},
		{"another pod under its name", pod("a", "v1", "Running"), recreated, all, "[a+]"},
		{"moved", pod("a", "v1", "Running"), pod("b", "v1", ""), all, "[a- b+]"},
		{"deleted", pod("a", "v1", "Running"), nil, all, "[a-]"},
		{"deleted unbound", pod("", "v1", ""), nil, all, "[]"},
		{"bound to a node that derives its pods", pod("", "v1", ""), pod("b", "v1", ""), notB, "[]"},
		{"moved to a node that derives its pods", pod("a", "v1", ""), pod("b", "v1", ""), notB, "[a-]"},
		{"deleted from a node that derives its pods", pod("b", "v1", ""), nil, notB, "[b-]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			change := bus.PodChange{Old: tc.old, New: tc.next, OldNode: kinds.BoundNode(tc.old), NewNode: kinds.BoundNode(tc.next)}
			for _, c := range change.IndexChanges(tc.entries) {
				if c.Key != "ns.p" {
					t.Fatalf("key %q, want ns.p", c.Key)
				}
				switch {
				case c.Pod == nil:
					got = append(got, c.Node+"-")
				case c.Pod == tc.next:
					got = append(got, c.Node+"+")
				default:
					t.Fatalf("an entry for %s with a pod that is not the new one", c.Node)
				}
			}
			if fmt.Sprint(got) != tc.want {
				t.Fatalf("changes %v, want %s", got, tc.want)
			}
		})
	}
	// A key the caller holds is the one its entries carry.
	given := bus.PodChange{Key: "ns.given", Old: pod("a", "v1", "Running"), New: pod("b", "v1", ""), OldNode: "a", NewNode: "b"}
	changes := given.IndexChanges(all)
	if len(changes) != 2 {
		t.Fatalf("a move made %d changes, want 2", len(changes))
	}
	for _, c := range changes {
		if c.Key != "ns.given" {
			t.Fatalf("entry for %s has key %q, want the one given", c.Node, c.Key)
		}
	}
}
