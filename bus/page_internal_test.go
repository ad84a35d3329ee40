package bus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestPagedKeys: a list's keys are remembered by filter and revision for
// two minutes, the latest four lists at most; a first page (revision 0)
// finds none.
func TestPagedKeys(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var p pagedKeys
	keys := func(n string) []string { return []string{n + "-a", n + "-b"} }
	p.put("ns.>", 10, keys("ten"), now)
	p.put("other.>", 10, keys("other"), now)
	for _, tc := range []struct {
		name   string
		filter string
		rev    uint64
		at     time.Time
		want   []string
	}{
		{"by filter and revision", "ns.>", 10, now.Add(time.Minute), keys("ten")},
		{"another namespace's", "other.>", 10, now, keys("other")},
		{"another revision", "ns.>", 11, now, nil},
		{"a first page", "ns.>", 0, now, nil},
		{"after two minutes", "ns.>", 10, now.Add(pagedListKeep), nil},
	} {
		if got := p.get(tc.filter, tc.rev, tc.at); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// Four more lists: the first two are forgotten.
	for rev := uint64(20); rev < 24; rev++ {
		p.put("ns.>", rev, keys("later"), now)
	}
	if got := p.get("ns.>", 10, now); got != nil {
		t.Errorf("the oldest of six lists still remembered: %q", got)
	}
	if got := p.get("ns.>", 20, now); !slices.Equal(got, keys("later")) {
		t.Errorf("the oldest of the latest four forgotten: %q", got)
	}
	// A list put again replaces itself, and lists kept too long go.
	p.put("ns.>", 21, keys("again"), now.Add(pagedListKeep))
	if got := p.get("ns.>", 21, now.Add(pagedListKeep)); !slices.Equal(got, keys("again")) || len(p.lists) != 1 {
		t.Errorf("after a put past the others' time: %q, %d lists kept", got, len(p.lists))
	}
}

// TestSmallestSorted: the n smallest keys, in order, whatever order they
// come in, against sorting them all.
func TestSmallestSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ keys, n int }{{2, 1}, {3, 2}, {10, 1}, {10, 9}, {1000, 500}, {1000, 7}, {5000, 500}} {
		keys := make([]string, tc.keys)
		for i := range keys {
			keys[i] = fmt.Sprintf("ns.k%06d", i)
		}
		want := slices.Clone(keys[:tc.n])
		for _, order := range []string{"ascending", "descending", "shuffled"} {
			in := slices.Clone(keys)
			switch order {
			case "descending":
				slices.Reverse(in)
			case "shuffled":
				r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
			}
			if got := smallestSorted(in, tc.n); !slices.Equal(got, want) {
				t.Fatalf("%d of %d keys, %s: got %d keys from %q, want from %q", tc.n, tc.keys, order, len(got), got[0], want[0])
			}
		}
	}
}
