package reconcile

import (
	"errors"
	"testing"

	"github.com/homeostat/homeostat/object"
)

// TestSyncedRevision: at Synced an informer claims the stream's revision
// at the watch's start only when it read that far, or the leader says
// nothing up to it is left; else it claims what it read.
func TestSyncedRevision(t *testing.T) {
	leader := func(ok bool, err error) func() (bool, error) { return func() (bool, error) { return ok, err } }
	unasked := func() (bool, error) {
		t.Fatal("asked the leader when the read had reached the baseline")
		return false, nil
	}
	for _, tc := range []struct {
		name           string
		read, baseline uint64
		reaches        func() (bool, error)
		want           uint64
	}{
		{"read up to the baseline", 10, 10, unasked, 10},
		{"read past it: a write during the read", 12, 10, unasked, 12},
		{"the last messages replaced or compacted: nothing left", 8, 10, leader(true, nil), 10},
		{"a message the consumer's count left out", 8, 10, leader(false, nil), 8},
		{"the leader cannot say", 8, 10, leader(true, errors.New("no leader")), 8},
		{"an empty bucket", 0, 0, unasked, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := syncedRevision(tc.read, tc.baseline, tc.reaches); got != tc.want {
				t.Fatalf("syncedRevision(%d, %d) = %d, want %d", tc.read, tc.baseline, got, tc.want)
			}
		})
	}
}

// An informer offers its watch a key's cached object only at the
// revision asked for, and only once synced: one of another revision may
// hold another head.
func TestInformerPrior(t *testing.T) {
	kept := &object.Object{Metadata: object.Meta{Name: "p", Namespace: "ns", ResourceVersion: "7"}}
	i := &Informer{items: map[string]*entry{"ns.p": {obj: kept}, "ns.gone": {}}, synced: true}
	for _, tc := range []struct {
		key  string
		rev  uint64
		want *object.Object
	}{
		{"ns.p", 7, kept},
		{"ns.p", 6, nil},
		{"ns.p", 8, nil},
		{"ns.q", 7, nil},
		{"ns.gone", 7, nil},
	} {
		if got := i.prior(tc.key, tc.rev); got != tc.want {
			t.Errorf("prior(%s, %d) = %v, want %v", tc.key, tc.rev, got, tc.want)
		}
	}
	// Listing afresh, the cache may hold a bucket made before, whose
	// revisions the new one numbers again.
	i.synced = false
	if got := i.prior("ns.p", 7); got != nil {
		t.Errorf("prior offered %v before a list afresh synced", got)
	}
}
