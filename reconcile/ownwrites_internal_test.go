package reconcile

import (
	"fmt"
	"maps"
	"testing"
)

// TestOwnWrites: what a pass wrote that the caches do not show yet is
// kept for the key's next pass, once; what they show is not; keys that
// wait are looked over as they grow, dropping what the caches have since
// shown.
func TestOwnWrites(t *testing.T) {
	caches := map[string]uint64{"pods": 10, "replicasets": 5} // each cache's revision
	shown := func(r string, rev uint64) bool {
		at, ok := caches[r]
		return !ok || at >= rev
	}
	tests := []struct {
		name   string
		latest map[string]uint64
		want   map[string]uint64
	}{
		{"nothing written", nil, nil},
		{"all shown", map[string]uint64{"pods": 10, "replicasets": 4}, nil},
		{"a resource with no cache", map[string]uint64{"events": 99}, nil},
		{"pods ahead of their cache", map[string]uint64{"pods": 12, "replicasets": 5}, map[string]uint64{"pods": 12}},
		{"both ahead", map[string]uint64{"pods": 11, "replicasets": 6}, map[string]uint64{"pods": 11, "replicasets": 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w ownWrites
			w.remember("ns.a", tc.latest, shown)
			if got := w.take("ns.a"); !maps.Equal(got, tc.want) {
				t.Fatalf("kept %v, want %v", got, tc.want)
			}
			if got := w.take("ns.a"); got != nil {
				t.Fatalf("taken twice: %v", got)
			}
		})
	}

	t.Run("a pass that shows all forgets the one before", func(t *testing.T) {
		var w ownWrites
		w.remember("ns.a", map[string]uint64{"pods": 12}, shown)
		w.remember("ns.a", map[string]uint64{"pods": 9}, shown)
		if got := w.take("ns.a"); got != nil {
			t.Fatalf("kept %v", got)
		}
	})

	t.Run("looked over as keys grow", func(t *testing.T) {
		var w ownWrites
		for i := range ownWritesSweep - 1 {
			w.remember(fmt.Sprint("ns.k", i), map[string]uint64{"pods": 11}, shown)
		}
		caches["pods"] = 11 // the cache catches up with all of them
		w.remember("ns.last", map[string]uint64{"pods": 12}, shown)
		if n := len(w.keys); n != 1 {
			t.Fatalf("%d keys kept after the sweep, want the one still ahead", n)
		}
		if got := w.take("ns.last"); got["pods"] != 12 {
			t.Fatalf("the key still ahead kept %v", got)
		}
	})
}
