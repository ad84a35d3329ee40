package kinds_test

import (
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func svc(name string, age time.Duration, spec kinds.ServiceSpec) kinds.DecodedService {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return kinds.DecodedService{Object: &object.Object{Metadata: object.Meta{Name: name, Namespace: "ns",
		CreationTimestamp: t0.Add(-age)}}, Spec: &spec}
}

// The proxies serve a port for the oldest Service asking for it, by name
// on a tie; a headless or ExternalName Service, a UDP port or a Service
// being deleted asks for none.
func TestPortHolder(t *testing.T) {
	tcp := func(ports ...int32) kinds.ServiceSpec {
		var s kinds.ServiceSpec
		for _, p := range ports {
			s.Ports = append(s.Ports, kinds.ServicePort{Port: p})
		}
		return s
	}
	deleting := svc("gone", time.Hour, tcp(80))
	now := time.Now()
	deleting.Object.Metadata.DeletionTimestamp = &now
	cases := []struct {
		name string
		svcs []kinds.DecodedService
		want string // the holder's name of port 80
	}{
		{"none", nil, ""},
		{"the older", []kinds.DecodedService{svc("young", 0, tcp(80)), svc("old", time.Minute, tcp(80, 81))}, "old"},
		{"a tie goes by name", []kinds.DecodedService{svc("b", 0, tcp(80)), svc("a", 0, tcp(80))}, "a"},
		{"other ports", []kinds.DecodedService{svc("a", time.Minute, tcp(81)), svc("b", 0, tcp(80))}, "b"},
		{"headless asks none", []kinds.DecodedService{svc("a", time.Minute, kinds.ServiceSpec{ClusterIP: "None", Ports: tcp(80).Ports}), svc("b", 0, tcp(80))}, "b"},
		{"ExternalName asks none", []kinds.DecodedService{svc("a", time.Minute, kinds.ServiceSpec{Type: "ExternalName", Ports: tcp(80).Ports})}, ""},
		{"UDP asks none", []kinds.DecodedService{svc("a", time.Minute, kinds.ServiceSpec{Ports: []kinds.ServicePort{{Port: 80, Protocol: "UDP"}}})}, ""},
		{"being deleted asks none", []kinds.DecodedService{deleting, svc("b", 0, tcp(80))}, "b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if h := kinds.PortHolder(80, tc.svcs); h != nil {
				got = h.Metadata.Name
			}
			if got != tc.want {
				t.Fatalf("holder %q, want %q", got, tc.want)
			}
		})
	}
}

// A named port's number: as its node gave it (the status), else as
// declared, of the protocol asked for (TCP when none).
func TestPortNumber(t *testing.T) {
	p := &kinds.Pod{Object: &object.Object{}, Spec: &kinds.PodSpec{}}
	p.Spec.Containers = []kinds.Container{{Name: "c", Ports: []kinds.ContainerPort{
		{Name: "http"}, {Name: "admin", ContainerPort: 9000}, {Name: "dns", ContainerPort: 53, Protocol: "UDP"}}}}
	p.Status.ContainerStatuses = []kinds.ContainerStatus{{Name: "c", Ports: []kinds.ContainerPort{
		{Name: "http", ContainerPort: 20001, Protocol: "TCP"}}}}
	cases := []struct {
		name, proto string
		want        int32
		ok          bool
	}{
		{"http", "", 20001, true}, {"http", "TCP", 20001, true}, {"admin", "", 9000, true},
		{"dns", "UDP", 53, true}, {"dns", "", 0, false}, {"none", "", 0, false},
	}
	for _, c := range cases {
		if got, ok := p.PortNumber(c.name, c.proto); got != c.want || ok != c.ok {
			t.Errorf("PortNumber(%q, %q) = %d, %v; want %d, %v", c.name, c.proto, got, ok, c.want, c.ok)
		}
	}
	unpicked := &kinds.Pod{Object: &object.Object{}, Spec: p.Spec}
	if _, ok := unpicked.PortNumber("http", ""); ok {
		t.Error("a port its node has not picked yet has a number")
	}
}
