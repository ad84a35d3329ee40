package controllers_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// sliceEndpoints reads a Service's EndpointSlices as "pod:port:ready",
// sorted, checking each against the pod's own status.
func (e *env) sliceEndpoints(svc string) []string {
	var out []string
	for _, o := range e.list("endpointslices", kinds.LabelServiceName+"="+svc) {
		s, err := kinds.DecodeEndpointSlice(o)
		if err != nil {
			e.t.Fatal(err)
		}
		if ref, ok := o.Metadata.ControllerOf(); !ok || ref.Kind != "Service" || ref.Name != svc {
			e.t.Fatalf("slice %s is not owned by Service %s: %+v", o.Metadata.Name, svc, o.Metadata.OwnerReferences)
		}
		for _, ep := range s.Endpoints {
			for _, p := range s.Ports {
				out = append(out, fmt.Sprintf("%s:%d:%v", ep.TargetRef.Name, p.Port, *ep.Conditions.Ready))
			}
		}
	}
	sort.Strings(out)
	return out
}

// podEndpoints is what sliceEndpoints must read for the pods of selector:
// each with the number its node gave its port named http.
func (e *env) podEndpoints(selector string) []string {
	var out []string
	for _, p := range e.Pods(selector) {
		for _, cs := range p.Status.ContainerStatuses {
			for _, cp := range cs.Ports {
				if cp.Name == "http" && cp.ContainerPort > 0 && p.Status.PodIP != "" {
					out = append(out, fmt.Sprintf("%s:%d:%v", p.Metadata.Name, cp.ContainerPort, p.Ready() && !p.Metadata.Deleting()))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func (e *env) endpointsCondition(svc string) *object.Condition {
	var st struct {
		Conditions []object.Condition `json:"conditions"`
	}
	_ = json.Unmarshal(e.get("services", svc).Status, &st)
	return object.FindCondition(st.Conditions, "EndpointsReady")
}

// A Service's EndpointSlices follow the pods its selector picks, each at
// the port its node gave it; its EndpointsReady condition (and a Warning
// event) says why it has no endpoints when it has none; its slices go
// with it.
func TestEndpointSlicesFollowPods(t *testing.T) {
	e := newEnv(t)
	e.controllers()
	e.Scheduler("s1")
	e.Node("n1", kinds.ResourceList{"cpu": "8", "memory": "8Gi", "pods": "20"}, nil)
	e.Node("n2", kinds.ResourceList{"cpu": "8", "memory": "8Gi", "pods": "20"}, nil)
	e.apply(`
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 8000, targetPort: http}]
`)
	reasonIs := func(reason string) func() bool {
		return func() bool {
			c := e.endpointsCondition("web")
			return c != nil && c.Reason == reason
		}
	}
	e.Eventually("the Service says it selects no pod", 10*time.Second, reasonIs("NoPodsSelected"))
	if c := e.endpointsCondition("web"); c.Status != "False" || !strings.Contains(c.Message, "app=web") {
		t.Fatalf("condition %+v", c)
	}
	e.apply(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, command: [x], ports: [{name: http}]}]}
`)
	sameAsPods := func(n int) func() bool {
		return func() bool {
			want := e.podEndpoints("app=web")
			got := e.sliceEndpoints("web")
			return len(want) == n && strings.Join(got, " ") == strings.Join(want, " ")
		}
	}
	e.Eventually("three ready endpoints, at their pods' ports", 20*time.Second, sameAsPods(3))
	e.Eventually("the Service ready", 10*time.Second, reasonIs("EndpointsReady"))

	// A target port no pod declares: no endpoints, and the Service says why.
	e.patch("services", "web", `{"spec":{"ports":[{"name":"http","port":8000,"targetPort":"web"}]}}`)
	e.Eventually("no endpoints for a port no pod declares", 10*time.Second, func() bool {
		return len(e.sliceEndpoints("web")) == 0 && reasonIs("TargetPortNotFound")()
	})
	if c := e.endpointsCondition("web"); !strings.Contains(c.Message, `named "web"`) {
		t.Fatalf("condition %+v", c)
	}
	e.Eventually("a Warning event on the Service", 10*time.Second, func() bool {
		for _, ev := range e.list("events", "") {
			var spec kinds.Event
			if json.Unmarshal(mustFields(ev), &spec) == nil && spec.InvolvedObject.Kind == "Service" && spec.Reason == "TargetPortNotFound" {
				return true
			}
		}
		return false
	})
	e.patch("services", "web", `{"spec":{"ports":[{"name":"http","port":8000,"targetPort":"http"}]}}`)
	e.patch("deployments", "web", `{"spec":{"replicas":1}}`)
	e.Eventually("one endpoint after the scale down", 20*time.Second, sameAsPods(1))

	// A younger Service asking for the same port is told it is taken
	// (its name sorts after the older one's too, for a tie within a second),
	// and gets it when the older one goes.
	e.apply(`
apiVersion: v1
kind: Service
metadata: {name: web-later}
spec:
  selector: {app: web}
  ports: [{name: http, port: 8000, targetPort: http}]
`)
	laterReason := func(reason string) func() bool {
		return func() bool {
			var st struct {
				Conditions []object.Condition `json:"conditions"`
			}
			_ = json.Unmarshal(e.get("services", "web-later").Status, &st)
			c := object.FindCondition(st.Conditions, "EndpointsReady")
			return c != nil && c.Reason == reason && (reason != "PortTaken" || strings.Contains(c.Message, "default/web"))
		}
	}
	e.Eventually("the younger Service told its port is taken", 10*time.Second, laterReason("PortTaken"))

	// Gone with their Service.
	if _, err := e.c.Delete(e.ctx, e.res("services"), "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the younger Service holds the port once the older is gone", 10*time.Second, laterReason("EndpointsReady"))
	e.Eventually("no slices of a Service gone", 10*time.Second, func() bool {
		l, err := e.c.List(e.ctx, e.res("endpointslices"), "default", client.ListOptions{LabelSelector: kinds.LabelServiceName + "=web"})
		return err == nil && len(l.Items) == 0
	})
}

// mustFields is an Event's members as one JSON object.
func mustFields(o *object.Object) []byte {
	m := map[string]json.RawMessage{}
	for k, v := range o.Fields {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}
