package process

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func portPod(uid string, ports ...kinds.ContainerPort) *kinds.Pod {
	return &kinds.Pod{Object: &object.Object{Metadata: object.Meta{Name: uid, Namespace: "ns", UID: uid}},
		Spec: &kinds.PodSpec{Containers: []kinds.Container{{Name: "c", Ports: ports}}}}
}

// Which number each port gets, pod after pod, in a range of 5 ports where
// the operating system holds one.
func TestPortBookAssigns(t *testing.T) {
	type step struct {
		uid     string
		ports   []kinds.ContainerPort
		before  map[string]int32 // container c's earlier numbers, by name
		release string           // instead: give this pod's ports back
		want    []int32
		err     bool
	}
	named := func(names ...string) []kinds.ContainerPort {
		var out []kinds.ContainerPort
		for _, n := range names {
			out = append(out, kinds.ContainerPort{Name: n})
		}
		return out
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"fixed numbers are the pod's own", []step{
			{uid: "a", ports: []kinds.ContainerPort{{ContainerPort: 8080}}, want: []int32{8080}},
			{uid: "b", ports: []kinds.ContainerPort{{ContainerPort: 8080, Protocol: "UDP"}}, want: []int32{8080}},
			{uid: "c", ports: []kinds.ContainerPort{{ContainerPort: 8080}}, err: true},
			{release: "a"},
			{uid: "c", ports: []kinds.ContainerPort{{ContainerPort: 8080}}, want: []int32{8080}},
		}},
		{"picked in turn, the busy one passed over", []step{
			{uid: "a", ports: named("http", "admin"), want: []int32{100, 101}},
			{uid: "b", ports: named("http"), want: []int32{103}},
			{uid: "c", ports: named("http"), want: []int32{104}},
			{uid: "d", ports: named("http"), err: true},
			{release: "b"},
			{uid: "d", ports: named("http"), want: []int32{103}},
		}},
		{"a failed pod holds nothing", []step{
			{uid: "a", ports: []kinds.ContainerPort{{ContainerPort: 101}}, want: []int32{101}},
			{uid: "b", ports: []kinds.ContainerPort{{Name: "http"}, {ContainerPort: 101}}, err: true},
			// The turn goes on past 100, which b held a moment: a number
			// given back is not given again at once, while clients of
			// the pod that had it may still be reaching for it.
			{uid: "c", ports: named("http"), want: []int32{103}},
			{uid: "d", ports: named("http"), want: []int32{104}},
			{uid: "e", ports: named("http"), want: []int32{100}},
		}},
		{"the number a pod had is kept", []step{
			{uid: "a", ports: named("http"), before: map[string]int32{"http": 104}, want: []int32{104}},
			{uid: "b", ports: named("http"), before: map[string]int32{"http": 104}, want: []int32{100}},
			{uid: "c", ports: named("http"), before: map[string]int32{"http": 9999}, want: []int32{101}},
		}},
		{"a fixed number in the range is not picked", []step{
			{uid: "a", ports: []kinds.ContainerPort{{ContainerPort: 100}}, want: []int32{100}},
			{uid: "b", ports: named("http"), want: []int32{101}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewPortBook(100, 104, func(_ string, n int32) bool { return n != 102 })
			for i, s := range tc.steps {
				if s.release != "" {
					b.Release(s.release)
					continue
				}
				before := map[string]map[string]int32{"c": s.before}
				_, mains, err := b.Assign(portPod(s.uid, s.ports...), before)
				if s.err {
					if !errors.Is(err, ErrPortTaken) {
						t.Fatalf("step %d (%s): got %v, want ErrPortTaken", i, s.uid, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, s.uid, err)
				}
				var got []int32
				for _, p := range mains[0].Ports {
					got = append(got, p.ContainerPort)
				}
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Fatalf("step %d (%s) numbers (-want +got):\n%s", i, s.uid, diff)
				}
			}
		})
	}
}

func TestPortEnv(t *testing.T) {
	got := portEnv([]kinds.ContainerPort{{ContainerPort: 8080}, {Name: "http-alt", ContainerPort: 20001}, {Name: "m", ContainerPort: 20002}})
	want := []string{envPorts + "=http-alt=20001,m=20002", "PORT=8080", "PORT_HTTP_ALT=20001", "PORT_M=20002"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if got := parsePorts(envPorts[len(envPorts):] + "http-alt=20001,m=20002"); !cmp.Equal(got, map[string]int32{"http-alt": 20001, "m": 20002}) {
		t.Fatalf("parsed %v", got)
	}
	if portEnv(nil) != nil {
		t.Fatal("a container without ports is told of some")
	}
}

// A port taken names the pod that holds it; a pod that holds no port is
// not named at all, nor is one given its ports back.
func TestPortBookNamesHoldersAlone(t *testing.T) {
	b := NewPortBook(100, 104, nil)
	if _, _, err := b.Assign(portPod("a", kinds.ContainerPort{ContainerPort: 8080}), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Assign(portPod("none"), nil); err != nil {
		t.Fatal(err)
	}
	_, _, err := b.Assign(portPod("b", kinds.ContainerPort{ContainerPort: 8080}), nil)
	if !errors.Is(err, ErrPortTaken) || !strings.Contains(err.Error(), "held on this node by pod ns/a") {
		t.Fatalf("got %v, want the port held by pod ns/a", err)
	}
	b.Release("a")
	if len(b.pods) != 0 {
		t.Fatalf("pods named: %v, want none", b.pods)
	}
}
