package process

import (
	"errors"
	"testing"

	"github.com/homeostat/homeostat/kinds"
)

func TestRunAs(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	yes := func() *bool { b := true; return &b }
	root, agent := Identity{0, 0}, Identity{1000, 1000}
	lookup := func(uid uint32) (uint32, bool) {
		if uid == 33 {
			return 33, true // www-data
		}
		if uid == 1000 {
			return 1000, true
		}
		return 0, false
	}
	for _, c := range []struct {
		name           string
		pod, container *kinds.SecurityContext
		def            *Identity
		agent          Identity
		want           *Identity
		err            bool
	}{
		{name: "nothing asked: as the agent", agent: root},
		{name: "a user, its primary group", pod: &kinds.SecurityContext{RunAsUser: n(33)}, agent: root, want: &Identity{33, 33}},
		{name: "a user without an entry gets its own number as group", pod: &kinds.SecurityContext{RunAsUser: n(4242)}, agent: root, want: &Identity{4242, 4242}},
		{name: "user and group", pod: &kinds.SecurityContext{RunAsUser: n(33), RunAsGroup: n(7)}, agent: root, want: &Identity{33, 7}},
		{name: "the container overrides the pod", pod: &kinds.SecurityContext{RunAsUser: n(33), RunAsGroup: n(7)},
			container: &kinds.SecurityContext{RunAsUser: n(4242)}, agent: root, want: &Identity{4242, 7}},
		{name: "the node's default", def: &Identity{65534, 65534}, agent: root, want: &Identity{65534, 65534}},
		{name: "the pod's user over the default", pod: &kinds.SecurityContext{RunAsUser: n(33)}, def: &Identity{65534, 65534}, agent: root, want: &Identity{33, 33}},
		{name: "a group over the default's", pod: &kinds.SecurityContext{RunAsGroup: n(7)}, def: &Identity{65534, 65534}, agent: root, want: &Identity{65534, 7}},
		{name: "only a group: the agent's user", pod: &kinds.SecurityContext{RunAsGroup: n(7)}, agent: root, want: &Identity{0, 7}},
		{name: "root asked explicitly", pod: &kinds.SecurityContext{RunAsUser: n(0)}, agent: root, want: &Identity{0, 0}},
		{name: "nonRoot with a user", pod: &kinds.SecurityContext{RunAsUser: n(33), RunAsNonRoot: yes()}, agent: root, want: &Identity{33, 33}},
		{name: "nonRoot as a root agent", pod: &kinds.SecurityContext{RunAsNonRoot: yes()}, agent: root, err: true},
		{name: "nonRoot and uid 0", container: &kinds.SecurityContext{RunAsUser: n(0), RunAsNonRoot: yes()}, agent: root, err: true},
		{name: "nonRoot met by the default", pod: &kinds.SecurityContext{RunAsNonRoot: yes()}, def: &Identity{65534, 65534}, agent: root, want: &Identity{65534, 65534}},
		{name: "nonRoot met by a non-root agent", pod: &kinds.SecurityContext{RunAsNonRoot: yes()}, agent: agent},
		{name: "a non-root agent cannot become another", pod: &kinds.SecurityContext{RunAsUser: n(33)}, agent: agent, err: true},
		{name: "a non-root agent asked to be itself", pod: &kinds.SecurityContext{RunAsUser: n(1000)}, agent: agent},
		{name: "a non-root agent cannot take another group", pod: &kinds.SecurityContext{RunAsUser: n(1000), RunAsGroup: n(0)}, agent: agent, err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := runAs(runAsInput{pod: c.pod, container: c.container, def: c.def, agent: c.agent, primaryGID: lookup})
			if c.err {
				if !errors.Is(err, ErrRunAs) {
					t.Fatalf("got %v, %v; want ErrRunAs", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("runAs = %v, want %v", got, c.want)
			}
		})
	}
}
