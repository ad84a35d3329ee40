package proxy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/kinds"
)

func TestServiceEnv(t *testing.T) {
	got := serviceEnv("my-web", "10.0.0.7", []kinds.ServicePort{{Name: "http", Port: 8000}, {Name: "admin-x", Port: 8001}})
	want := []kinds.EnvVar{
		{Name: "MY_WEB_SERVICE_HOST", Value: "10.0.0.7"}, {Name: "MY_WEB_SERVICE_PORT", Value: "8000"},
		{Name: "MY_WEB_SERVICE_PORT_HTTP", Value: "8000"}, {Name: "MY_WEB_SERVICE_PORT_ADMIN_X", Value: "8001"},
		{Name: "MY_WEB_PORT", Value: "tcp://10.0.0.7:8000"},
		{Name: "MY_WEB_PORT_8000_TCP", Value: "tcp://10.0.0.7:8000"}, {Name: "MY_WEB_PORT_8000_TCP_PROTO", Value: "tcp"},
		{Name: "MY_WEB_PORT_8000_TCP_PORT", Value: "8000"}, {Name: "MY_WEB_PORT_8000_TCP_ADDR", Value: "10.0.0.7"},
		{Name: "MY_WEB_PORT_8001_TCP", Value: "tcp://10.0.0.7:8001"}, {Name: "MY_WEB_PORT_8001_TCP_PROTO", Value: "tcp"},
		{Name: "MY_WEB_PORT_8001_TCP_PORT", Value: "8001"}, {Name: "MY_WEB_PORT_8001_TCP_ADDR", Value: "10.0.0.7"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if serviceEnv("none", "h", nil) != nil {
		t.Fatal("a Service without ports served gives variables")
	}
}
