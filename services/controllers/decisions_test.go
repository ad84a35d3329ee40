package controllers

import (
	"slices"
	"testing"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func TestRollingBounds(t *testing.T) {
	i := func(n int32) *kinds.IntOrString { return &kinds.IntOrString{Int: n} }
	pct := func(s string) *kinds.IntOrString { return &kinds.IntOrString{IsString: true, Str: s} }
	rolling := func(surge, unavail *kinds.IntOrString) kinds.DeploymentSpec {
		return kinds.DeploymentSpec{Strategy: kinds.DeploymentStrategy{Type: "RollingUpdate",
			RollingUpdate: &kinds.RollingUpdateStrategy{MaxSurge: surge, MaxUnavailable: unavail}}}
	}
	for _, tc := range []struct {
		name                   string
		spec                   kinds.DeploymentSpec
		replicas               int32
		wantSurge, wantUnavail int32
	}{
		{"defaults are 25% each, surge rounded up, unavailable down", kinds.DeploymentSpec{}, 10, 3, 2},
		{"defaults on one replica", kinds.DeploymentSpec{}, 1, 1, 0},
		{"numbers as given", rolling(i(1), i(1)), 4, 1, 1},
		{"percentages", rolling(pct("50%"), pct("10%")), 5, 3, 0},
		{"both zero would stall: one unavailable", rolling(i(0), i(0)), 3, 0, 1},
		{"recreate: all unavailable, no surge", kinds.DeploymentSpec{Strategy: kinds.DeploymentStrategy{Type: "Recreate"}}, 4, 0, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			surge, unavail := rollingBounds(tc.spec, tc.replicas)
			if surge != tc.wantSurge || unavail != tc.wantUnavail {
				t.Fatalf("got surge %d, unavailable %d; want %d, %d", surge, unavail, tc.wantSurge, tc.wantUnavail)
			}
		})
	}
}

// rsAt is a ReplicaSet view at generation 2 with a slot bound, settled at
// generation settled.
func rsAt(spec, pods, slots int32, settled int64) *rsView {
	o := withSlots(&object.Object{Metadata: object.Meta{Name: "rs", Generation: 2}}, slots, settled)
	return &rsView{obj: o, spec: kinds.ReplicaSetSpec{Replicas: &spec}, status: kinds.ReplicaSetStatus{Replicas: pods}}
}

func TestMayHave(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   *rsView
		want int32
	}{
		{"settled: its spec", rsAt(3, 3, 3, 2), 3},
		{"settled: pods it still has above its spec", rsAt(3, 4, 4, 2), 4},
		{"settled: pods not yet made count from the spec", rsAt(3, 1, 3, 2), 3},
		{"settled with a gap below a higher slot: the pods, not the bound", rsAt(3, 3, 5, 2), 3},
		{"scaled down, not settled since: every slot below the bound", rsAt(1, 1, 3, 1), 3},
		{"never settled", rsAt(2, 0, 4, 0), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rs.mayHave(); got != tc.want {
				t.Fatalf("mayHave() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSurgeTo(t *testing.T) {
	rs := func(spec, pods int32) *rsView { return rsAt(spec, pods, max(spec, pods), 2) }
	for _, tc := range []struct {
		name                         string
		replicas, surge, newNow, has int32
		old                          []*rsView
		want                         int32
	}{
		{"a first ReplicaSet takes all", 4, 1, 0, 0, nil, 4},
		{"room of one above the old pods", 4, 1, 0, 0, []*rsView{rs(4, 4)}, 1},
		{"no room while the old still has its pods", 4, 1, 1, 1, []*rsView{rs(4, 4)}, 1},
		// The old one was told to go to 3 but still has 4 pods: they count.
		{"pods the old one was told to shed still count", 4, 1, 1, 1, []*rsView{rs(3, 4)}, 1},
		{"once they are gone, room opens", 4, 1, 1, 1, []*rsView{rs(3, 3)}, 2},
		{"pods not yet created count from the spec", 4, 1, 1, 1, []*rsView{rs(3, 0)}, 2},
		{"several old ones", 6, 2, 0, 0, []*rsView{rs(2, 3), rs(3, 3)}, 2},
		{"never above the desired count", 4, 10, 0, 0, []*rsView{rs(1, 1)}, 4},
		{"never shrinks the new one", 4, 1, 3, 3, []*rsView{rs(4, 4)}, 3},
		// A stale reconcile of the old one may still fill slots 1 and 2.
		{"an old one scaled down but not settled counts its slots", 4, 1, 2, 2, []*rsView{rsAt(1, 1, 3, 1)}, 2},
		{"once settled, its pods", 4, 1, 2, 2, []*rsView{rsAt(1, 1, 1, 2)}, 4},
		{"the new one's own slots count too", 4, 1, 2, 4, []*rsView{rs(1, 1)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := surgeTo(tc.replicas, tc.surge, tc.newNow, tc.has, tc.old); got != tc.want {
				t.Fatalf("surgeTo(%d, %d, %d, ...) = %d, want %d", tc.replicas, tc.surge, tc.newNow, got, tc.want)
			}
		})
	}
}

func TestScaleDownOld(t *testing.T) {
	rs := func(spec, available int32) *rsView {
		return &rsView{spec: kinds.ReplicaSetSpec{Replicas: &spec}, status: kinds.ReplicaSetStatus{AvailableReplicas: available}}
	}
	// Five replicas, one may be unavailable: at least four available.
	const minAvailable = 4
	for _, tc := range []struct {
		name  string
		newRS *rsView
		old   []*rsView
		want  []int32
	}{
		{"a rollout's first step: one old pod goes", rs(2, 0), []*rsView{rs(5, 5)}, []int32{4}},
		// The old one was told to go to 4 and its status does not show it
		// yet: still only four available, none more may go.
		{"pods an old one was told to shed are not available", rs(3, 0), []*rsView{rs(4, 5)}, []int32{4}},
		{"one new pod available: one more old one goes", rs(3, 1), []*rsView{rs(4, 5)}, []int32{3}},
		{"old pods not available go first, within the bound", rs(2, 0), []*rsView{rs(5, 3)}, []int32{4}},
		{"old pods not available go even when none is", rs(2, 0), []*rsView{rs(5, 0)}, []int32{4}},
		{"oldest first", rs(2, 2), []*rsView{rs(2, 2), rs(2, 2)}, []int32{0, 2}},
		{"the new ones all available: the old ones go", rs(5, 5), []*rsView{rs(1, 1)}, []int32{0}},
		{"new pods not yet available hold the old ones", rs(5, 1), []*rsView{rs(3, 3)}, []int32{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total := tc.newRS.replicas()
			for _, r := range tc.old {
				total += r.replicas()
			}
			got := scaleDownOld(minAvailable, total, tc.newRS, tc.old)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("scaleDownOld = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeletionOrder(t *testing.T) {
	now := time.Now()
	pod := func(name, node, phase string, ready bool, restarts int32, age time.Duration) *kinds.Pod {
		p := &kinds.Pod{Object: &object.Object{Metadata: object.Meta{Name: name, CreationTimestamp: now.Add(-age)}}, Spec: &kinds.PodSpec{}}
		p.Spec.NodeName = node
		p.Status.Phase = phase
		p.Status.ContainerStatuses = []kinds.ContainerStatus{{Name: "c", Ready: ready, RestartCount: restarts}}
		if ready {
			p.Status.Conditions = []object.Condition{{Type: kinds.PodReady, Status: object.ConditionTrue}}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []*kinds.Pod
		want int32
		out  []string // deletion order, first first
	}{
		{"outside the slots first", []*kinds.Pod{
			pod("rs-0", "n", kinds.PodRunning, true, 0, time.Hour),
			pod("rs-3", "n", kinds.PodRunning, true, 0, time.Hour),
		}, 1, []string{"rs-3", "rs-0"}},
		{"unscheduled before scheduled, pending before running, not ready before ready", []*kinds.Pod{
			pod("rs-0", "n", kinds.PodRunning, true, 0, time.Hour),
			pod("rs-1", "n", kinds.PodRunning, false, 0, time.Hour),
			pod("rs-2", "n", kinds.PodPending, false, 0, time.Hour),
			pod("rs-3", "", kinds.PodPending, false, 0, time.Hour),
		}, 4, []string{"rs-3", "rs-2", "rs-1", "rs-0"}},
		{"more restarts first, then newer first", []*kinds.Pod{
			pod("rs-0", "n", kinds.PodRunning, true, 0, time.Hour),
			pod("rs-1", "n", kinds.PodRunning, true, 5, time.Hour),
			pod("rs-2", "n", kinds.PodRunning, true, 0, time.Minute),
		}, 3, []string{"rs-1", "rs-2", "rs-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range deletionOrder(tc.pods, "rs", tc.want) {
				got = append(got, p.Metadata.Name)
			}
			if len(got) != len(tc.out) {
				t.Fatalf("got %v, want %v", got, tc.out)
			}
			for i := range got {
				if got[i] != tc.out[i] {
					t.Fatalf("got %v, want %v", got, tc.out)
				}
			}
		})
	}
}

func TestRenewal(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	grace := 40 * time.Second
	lease := func(holder string, ago time.Duration) *bus.Lease {
		return &bus.Lease{Holder: holder, Renewed: now.Add(-ago)}
	}
	for _, tc := range []struct {
		name       string
		prev, next *bus.Lease
		want       bool
	}{
		{"first sight of a lease", nil, lease("a", 0), false},
		{"lease gone", lease("a", 10*time.Second), nil, false},
		{"live lease renewed by its holder", lease("a", 10*time.Second), lease("a", 0), true},
		{"renewed after it lapsed", lease("a", 41*time.Second), lease("a", 0), false},
		{"renewed at the very end of its grace", lease("a", grace), lease("a", 0), false},
		{"taken by another holder", lease("a", 5*time.Second), lease("b", 0), false},
		{"an older renewal than the one held", lease("a", 5*time.Second), lease("a", 8*time.Second), false},
	} {
		if got := renewal(tc.prev, tc.next, now, grace); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCoverage(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	grace := 40 * time.Second
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type renewal struct {
		at   int
		live bool // past the watch's replay
	}
	for _, tc := range []struct {
		name      string
		renewals  []renewal
		now       int
		silent    bool
		silenceAt int // -1: none seen
	}{
		{"no renewal seen", nil, 0, true, -1},
		{"renewals overlapping", []renewal{{0, true}, {30, true}, {60, true}}, 90, false, -1},
		{"every heartbeat lapsed, none back", []renewal{{0, true}, {10, true}}, 50, true, -1},
		{"just before the last lapses", []renewal{{0, true}, {10, true}}, 49, false, -1},
		{"a silence ended by a renewal", []renewal{{0, true}, {10, true}, {70, true}}, 80, false, 70},
		{"the later of two silences", []renewal{{0, true}, {70, true}, {200, true}, {210, true}}, 220, false, 200},
		{"a renewal at the very end of the grace", []renewal{{0, true}, {40, true}}, 50, false, -1},
		{"a gap in the replay is no silence", []renewal{{0, false}, {70, false}, {80, true}}, 90, false, -1},
		{"an older renewal delivered late", []renewal{{0, true}, {30, true}, {20, true}}, 65, false, -1},
	} {
		var c coverage
		for _, r := range tc.renewals {
			c = c.renewed(at(r.at), grace, r.live)
		}
		want := time.Time{}
		if tc.silenceAt >= 0 {
			want = at(tc.silenceAt)
		}
		if got := c.silent(at(tc.now)); got != tc.silent || !c.silenceEnded.Equal(want) {
			t.Errorf("%s: silent %v, silence ended %v; want %v, %v", tc.name, got, c.silenceEnded, tc.silent, want)
		}
	}
}

func TestUntilExpiry(t *testing.T) {
	secs := func(n int32) *int32 { return &n }
	done := kinds.JobStatus{Conditions: []object.Condition{{Type: "Complete", Status: object.ConditionTrue}}}
	failed := kinds.JobStatus{Conditions: []object.Condition{{Type: "Failed", Status: object.ConditionTrue}}}
	running := kinds.JobStatus{Active: 1}
	for _, tc := range []struct {
		name        string
		ttl         *int32
		before, now kinds.JobStatus
		want        time.Duration
	}{
		{"completes in this pass", secs(30), running, done, 30 * time.Second},
		{"fails in this pass", secs(5), running, failed, 5 * time.Second},
		{"a time to live of none comes back at once", secs(0), running, done, time.Millisecond},
		{"no time to live", nil, running, done, 0},
		{"finished before: expireFinished times it", secs(30), done, done, 0},
		{"still running", secs(30), running, running, 0},
	} {
		if got := untilExpiry(kinds.JobSpec{TTLSecondsAfterFinished: tc.ttl}, tc.before, tc.now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestSooner(t *testing.T) {
	for _, tc := range []struct{ cur, d, want time.Duration }{
		{0, 3 * time.Second, 3 * time.Second},
		{2 * time.Second, 3 * time.Second, 2 * time.Second},
		{5 * time.Second, 3 * time.Second, 3 * time.Second},
		{5 * time.Second, 0, 5 * time.Second},
		{0, 0, 0},
	} {
		if got := sooner(tc.cur, tc.d); got != tc.want {
			t.Errorf("sooner(%s, %s) = %s, want %s", tc.cur, tc.d, got, tc.want)
		}
	}
}

// A small ReplicaSet's pods go in one batch; a large one's in batches that
// double up to the cap, so that a failing create costs one batch.
func TestCreateBatches(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{0, nil},
		{1, []int{1}},
		{10, []int{10}},
		{16, []int{16}},
		{17, []int{16, 1}},
		{100, []int{16, 32, 52}},
		{2000, []int{16, 32, 64, 128, 256, 500, 500, 500, 4}},
	} {
		if got := createBatches(tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("createBatches(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

// A ReplicaSet's free slots are handed out lowest first, skipping those
// taken, as many as each batch asks for; each pod has its own labels and
// the template's spec as encoded alone.
func TestFreeSlotsInOrder(t *testing.T) {
	rs := &object.Object{APIVersion: "apps/v1", Kind: "ReplicaSet", Metadata: object.Meta{Name: "web", Namespace: "default", UID: "u1"}}
	tmpl := kinds.PodTemplate{Metadata: kinds.TemplateMeta{Labels: map[string]string{"app": "web"}},
		Spec: kinds.PodSpec{Containers: kinds.Containers{{Name: "c", Image: "img"}}}}
	maker, err := newPodMaker(rs, tmpl, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	names := func(pods []*object.Object) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Metadata.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		want  int32
		taken []string
		takes []int
		got   [][]string
	}{
		{"none taken", 5, nil, []int{2, 2, 2}, [][]string{{"web-0", "web-1"}, {"web-2", "web-3"}, {"web-4"}}},
		{"gaps", 6, []string{"web-0", "web-2", "web-3"}, []int{2, 2}, [][]string{{"web-1", "web-4"}, {"web-5"}}},
		{"taken outside the slots", 2, []string{"web-7"}, []int{5}, [][]string{{"web-0", "web-1"}}},
		{"all taken", 2, []string{"web-0", "web-1"}, []int{1}, [][]string{nil}},
	} {
		taken := map[string]bool{}
		for _, n := range tc.taken {
			taken[n] = true
		}
		free := &freeSlots{rs: "web", want: tc.want, taken: taken, maker: maker}
		for i, n := range tc.takes {
			if got := names(free.take(n)); !slices.Equal(got, tc.got[i]) {
				t.Errorf("%s: take %d of %d = %v, want %v", tc.name, i+1, len(tc.takes), got, tc.got[i])
			}
		}
	}
	var alone object.Object
	if err := alone.SetSpec(tmpl.Spec); err != nil {
		t.Fatal(err)
	}
	pods := (&freeSlots{rs: "web", want: 2, taken: map[string]bool{}, maker: maker}).take(2)
	if string(pods[0].Spec) != string(alone.Spec) || pods[0].Metadata.Labels["app"] != "web" {
		t.Fatalf("a slot's pod has spec %s and labels %v, want %s and app=web", pods[0].Spec, pods[0].Metadata.Labels, alone.Spec)
	}
	pods[0].Metadata.Labels["x"] = "y"
	if _, shared := pods[1].Metadata.Labels["x"]; shared {
		t.Fatal("two slots' pods share one map of labels")
	}
}
