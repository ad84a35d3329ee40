package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
)

// epPod is a pod for desiredSlices: address "" means none yet; ports are
// what its node gave it (name=number).
func epPod(name, ip string, ready, deleting bool, ports ...string) *kinds.Pod {
	p := &kinds.Pod{Object: &object.Object{Metadata: object.Meta{Name: name, Namespace: "ns", UID: "uid-" + name}}, Spec: &kinds.PodSpec{}}
	p.Spec.NodeName = "n1"
	p.Status.PodIP, p.Status.Phase = ip, kinds.PodRunning
	st := object.ConditionFalse
	if ready {
		st = object.ConditionTrue
	}
	p.Status.Conditions = []object.Condition{{Type: kinds.PodReady, Status: st}}
	if deleting {
		now := time.Now()
		p.Metadata.DeletionTimestamp = &now
	}
	var cps []kinds.ContainerPort
	for _, kv := range ports {
		var n int32
		name, num, _ := strings.Cut(kv, "=")
		_, _ = fmt.Sscan(num, &n)
		cps = append(cps, kinds.ContainerPort{Name: name, ContainerPort: n, Protocol: "TCP"})
	}
	p.Spec.Containers = []kinds.Container{{Name: "c", Ports: func() []kinds.ContainerPort {
		out := make([]kinds.ContainerPort, len(cps))
		for i, cp := range cps {
			out[i] = kinds.ContainerPort{Name: cp.Name, Protocol: "TCP"} // declared without numbers
		}
		return out
	}()}}
	p.Status.ContainerStatuses = []kinds.ContainerStatus{{Name: "c", Ports: cps}}
	return p
}

// sliceText renders slices as "name: addr(ready,serving,terminating)... | ports".
func sliceText(v endpointsVerdict) []string {
	var out []string
	for _, s := range v.slices {
		var eps []string
		for _, e := range s.slice.Endpoints {
			eps = append(eps, fmt.Sprintf("%s/%s(%v,%v,%v)", e.TargetRef.Name, e.Addresses[0], *e.Conditions.Ready, *e.Conditions.Serving, *e.Conditions.Terminating))
		}
		var ports []string
		for _, p := range s.slice.Ports {
			ports = append(ports, fmt.Sprintf("%s=%d", p.Name, p.Port))
		}
		out = append(out, fmt.Sprintf("%s %s [%s] [%s]", s.name, s.slice.AddressType, strings.Join(eps, " "), strings.Join(ports, " ")))
	}
	return out
}

func TestDesiredSlices(t *testing.T) {
	named := func(name, target string) kinds.ServicePort {
		return kinds.ServicePort{Name: name, Port: 80, TargetPort: &kinds.IntOrString{IsString: true, Str: target}}
	}
	web := kinds.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []kinds.ServicePort{named("http", "http")}}
	h := func(key string) string { return "web-" + shortHash(key) }
	cases := []struct {
		name   string
		spec   kinds.ServiceSpec
		pods   []*kinds.Pod
		slices []string
		reason string
	}{
		{"no pods", web, nil, nil, reasonNoPodsSelected},
		{"one ready pod", web, []*kinds.Pod{epPod("a", "10.0.0.1", true, false, "http=20001")},
			[]string{h("IPv4 http/TCP/20001") + " IPv4 [a/10.0.0.1(true,true,false)] [http=20001]"}, reasonEndpointsReady},
		{"two pods, two numbers, two slices", web, []*kinds.Pod{
			epPod("b", "10.0.0.1", true, false, "http=20002"), epPod("a", "10.0.0.1", true, false, "http=20001")},
			sortedSlices(
				h("IPv4 http/TCP/20001")+" IPv4 [a/10.0.0.1(true,true,false)] [http=20001]",
				h("IPv4 http/TCP/20002")+" IPv4 [b/10.0.0.1(true,true,false)] [http=20002]"), reasonEndpointsReady},
		{"same numbers share a slice, by name", web, []*kinds.Pod{
			epPod("b", "10.0.0.2", true, false, "http=20001"), epPod("a", "10.0.0.1", false, false, "http=20001")},
			[]string{h("IPv4 http/TCP/20001") + " IPv4 [a/10.0.0.1(false,false,false) b/10.0.0.2(true,true,false)] [http=20001]"}, reasonEndpointsReady},
		{"a pod without an address is not an endpoint yet", web, []*kinds.Pod{epPod("a", "", true, false, "http=20001")},
			nil, reasonNoReadyEndpoints},
		{"a terminating pod serves but is not ready", web, []*kinds.Pod{epPod("a", "10.0.0.1", true, true, "http=20001")},
			[]string{h("IPv4 http/TCP/20001") + " IPv4 [a/10.0.0.1(false,true,true)] [http=20001]"}, reasonNoReadyEndpoints},
		{"a finished pod is none", web, []*kinds.Pod{func() *kinds.Pod {
			p := epPod("a", "10.0.0.1", false, false, "http=20001")
			p.Status.Phase = kinds.PodSucceeded
			return p
		}()}, nil, reasonNoReadyEndpoints},
		{"a target port no pod declares", kinds.ServiceSpec{Selector: web.Selector, Ports: []kinds.ServicePort{named("http", "web")}},
			[]*kinds.Pod{epPod("a", "10.0.0.1", true, false, "http=20001")}, nil, reasonTargetPortNotFound},
		{"one port of two resolves", kinds.ServiceSpec{Selector: web.Selector, Ports: []kinds.ServicePort{named("http", "http"), named("admin", "admin")}},
			[]*kinds.Pod{epPod("a", "10.0.0.1", true, false, "http=20001")},
			[]string{h("IPv4 http/TCP/20001") + " IPv4 [a/10.0.0.1(true,true,false)] [http=20001]"}, reasonTargetPortNotFound},
		{"numbered and unset target ports", kinds.ServiceSpec{Selector: web.Selector, Ports: []kinds.ServicePort{
			{Name: "a", Port: 80, TargetPort: &kinds.IntOrString{Int: 8080}}, {Name: "b", Port: 81}}},
			[]*kinds.Pod{epPod("a", "10.0.0.1", true, false)},
			[]string{h("IPv4 a/TCP/8080,b/TCP/81") + " IPv4 [a/10.0.0.1(true,true,false)] [a=8080 b=81]"}, reasonEndpointsReady},
		{"IPv6", web, []*kinds.Pod{epPod("a", "::1", true, false, "http=20001")},
			[]string{h("IPv6 http/TCP/20001") + " IPv6 [a/::1(true,true,false)] [http=20001]"}, reasonEndpointsReady},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := desiredSlices("web", tc.spec, tc.pods)
			if got := sliceText(v); strings.Join(got, "\n") != strings.Join(tc.slices, "\n") {
				t.Fatalf("slices:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.slices, "\n"))
			}
			if v.reason != tc.reason || v.ready != (tc.reason == reasonEndpointsReady) {
				t.Fatalf("reason %q (ready %v: %s), want %q", v.reason, v.ready, v.message, tc.reason)
			}
		})
	}
	// More than 100 endpoints of one set of numbers take several slices.
	var many []*kinds.Pod
	for i := range 250 {
		many = append(many, epPod(fmt.Sprintf("p%03d", i), "10.0.0.1", true, false, "http=20001"))
	}
	v := desiredSlices("web", web, many)
	if len(v.slices) != 3 || len(v.slices[0].slice.Endpoints) != 100 || len(v.slices[2].slice.Endpoints) != 50 ||
		v.slices[1].name != h("IPv4 http/TCP/20001")+"-1" {
		t.Fatalf("250 endpoints: %d slices (%v)", len(v.slices), sliceText(v)[0][:40])
	}
}

func sortedSlices(s ...string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// Which pod changes can change a Service's endpoints, and so wake it.
func TestEndpointChanged(t *testing.T) {
	base := func() *kinds.Pod { return epPod("a", "10.0.0.1", true, false, "http=20001") }
	noIP := func() *kinds.Pod { return epPod("a", "", false, false, "http=20001") }
	cases := []struct {
		name   string
		old    *kinds.Pod
		change func(p *kinds.Pod)
		want   bool
	}{
		{"nothing", base(), func(*kinds.Pod) {}, false},
		{"an annotation", base(), func(p *kinds.Pod) { p.Metadata.Annotations = map[string]string{"x": "y"} }, false},
		{"a bind, no address yet", noIP(), func(p *kinds.Pod) { p.Spec.NodeName = "n2" }, false},
		{"an address", noIP(), func(p *kinds.Pod) { p.Status.PodIP = "10.0.0.1" }, true},
		{"not ready", base(), func(p *kinds.Pod) { p.Status.Conditions[0].Status = object.ConditionFalse }, true},
		{"deleted", base(), func(p *kinds.Pod) { now := time.Now(); p.Metadata.DeletionTimestamp = &now }, true},
		{"deleted before it had an address", noIP(), func(p *kinds.Pod) { now := time.Now(); p.Metadata.DeletionTimestamp = &now }, true},
		{"labels", base(), func(p *kinds.Pod) { p.Metadata.Labels = map[string]string{"app": "other"} }, true},
		{"its port's number", base(), func(p *kinds.Pod) { p.Status.ContainerStatuses[0].Ports[0].ContainerPort = 20002 }, true},
		{"finished", base(), func(p *kinds.Pod) { p.Status.Phase = kinds.PodSucceeded }, true},
		{"another container restarted, listed first", base(), func(p *kinds.Pod) {
			p.Status.ContainerStatuses = append([]kinds.ContainerStatus{{Name: "side", RestartCount: 1}}, p.Status.ContainerStatuses...)
		}, false},
		{"its port given to another container", base(), func(p *kinds.Pod) {
			p.Status.ContainerStatuses = []kinds.ContainerStatus{{Name: "c"}, {Name: "side", Ports: p.Status.ContainerStatuses[0].Ports}}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := epPod("a", "", false, false)
			*next = *tc.old
			spec := *tc.old.Spec // a decoded spec is shared: a change is made to a copy
			next.Spec = &spec
			next.Object = tc.old.Object.Clone()
			next.Status.Conditions = append([]object.Condition(nil), tc.old.Status.Conditions...)
			next.Status.ContainerStatuses = []kinds.ContainerStatus{{Name: "c", Ports: append([]kinds.ContainerPort(nil), tc.old.Status.ContainerStatuses[0].Ports...)}}
			tc.change(next)
			ch := reconcile.Change{Old: tc.old.Object, New: next.Object, OldValue: tc.old, NewValue: next}
			if got := endpointChanged(ch); got != tc.want {
				t.Fatalf("endpointChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
