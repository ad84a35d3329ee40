package kinds

import (
	"encoding/json"
	"fmt"

	"github.com/homeostat/homeostat/object"
)

// ServiceSpec is a Service's desired state: the pods its selector picks,
// reached on its ports through the proxy on every node.
type ServiceSpec struct {
	Type         string            `json:"type,omitempty"`
	Selector     map[string]string `json:"selector,omitempty"`
	Ports        []ServicePort     `json:"ports,omitempty"`
	ClusterIP    string            `json:"clusterIP,omitempty"`
	ExternalName string            `json:"externalName,omitempty"`
}

// ServicePort is a port of a Service and the pods' port behind it.
type ServicePort struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Port     int32  `json:"port"`
	// TargetPort is the pods' port, by number or by the name of a
	// container port; Port itself when nil.
	TargetPort *IntOrString `json:"targetPort,omitempty"`
}

// LabelServiceName names the Service an EndpointSlice is of, as in
// Kubernetes (kubernetes.io/service-name).
const LabelServiceName = "kubernetes.io/service-name"

// LabelManagedBy names who keeps an EndpointSlice; the endpoints
// controller keeps only those it marked so.
const LabelManagedBy = "endpointslice.kubernetes.io/managed-by"

// EndpointSlice is a decoded EndpointSlice: a Service's endpoints that
// share one set of port numbers.
type EndpointSlice struct {
	AddressType string         `json:"addressType"`
	Endpoints   []Endpoint     `json:"endpoints"`
	Ports       []EndpointPort `json:"ports"`
}

// Endpoint is one pod behind a Service.
type Endpoint struct {
	Addresses  []string           `json:"addresses"`
	Conditions EndpointConditions `json:"conditions"`
	NodeName   string             `json:"nodeName,omitempty"`
	TargetRef  *ObjectReference   `json:"targetRef,omitempty"`
}

// EndpointConditions: Ready takes new connections; Serving answers,
// terminating or not; Terminating is being deleted.
type EndpointConditions struct {
	Ready       *bool `json:"ready,omitempty"`
	Serving     *bool `json:"serving,omitempty"`
	Terminating *bool `json:"terminating,omitempty"`
}

// EndpointPort is a Service port's number at the endpoints of a slice.
type EndpointPort struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
}

// DecodeEndpointSlice decodes an EndpointSlice object's members.
func DecodeEndpointSlice(o *object.Object) (EndpointSlice, error) {
	var s EndpointSlice
	for name, dst := range map[string]any{"addressType": &s.AddressType, "endpoints": &s.Endpoints, "ports": &s.Ports} {
		if raw, ok := o.Fields[name]; ok && len(raw) > 0 {
			if err := json.Unmarshal(raw, dst); err != nil {
				return s, fmt.Errorf("EndpointSlice %s: %s: %w", o.Key(), name, err)
			}
		}
	}
	return s, nil
}

// ServiceBefore orders Services by age, then namespace and name: when two
// Services ask for one port, the proxies serve it for the older, and the
// endpoints controller tells the other why it is not served.
func ServiceBefore(a, b *object.Object) bool {
	ta, tb := a.Metadata.CreationTimestamp, b.Metadata.CreationTimestamp
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.Key() < b.Key()
}

// ProxiedPorts are the ports of a Service the proxies listen on: its TCP
// ports, unless it is an ExternalName or a headless Service.
func (s *ServiceSpec) ProxiedPorts() []ServicePort {
	if s.Type == "ExternalName" || s.ClusterIP == "None" {
		return nil
	}
	var out []ServicePort
	for _, p := range s.Ports {
		if Protocol(p.Protocol) == "TCP" {
			out = append(out, p)
		}
	}
	return out
}

// DecodedService is a Service with its decoded spec.
type DecodedService struct {
	Object *object.Object
	Spec   *ServiceSpec
}

// PortHolder is, of svcs, the Service the proxies serve a port for: the
// oldest that asks for it (nil when none does).
func PortHolder(port int32, svcs []DecodedService) *object.Object {
	var holder *object.Object
	for _, s := range svcs {
		if s.Spec == nil || s.Object.Metadata.Deleting() {
			continue
		}
		for _, p := range s.Spec.ProxiedPorts() {
			if p.Port == port && (holder == nil || ServiceBefore(s.Object, holder)) {
				holder = s.Object
			}
		}
	}
	return holder
}

// ServiceSpecOrNil decodes o's spec as a Service's, or returns nil: the
// decoder that informers keep Services with, once per change.
func ServiceSpecOrNil(o *object.Object) any {
	var spec ServiceSpec
	if o.DecodeSpec(&spec) != nil {
		return nil
	}
	return &spec
}

// DecodedServices are the Services of a cache that keeps them decoded by
// ServiceSpecOrNil (an informer).
func DecodedServices(cache interface {
	List() []*object.Object
	Value(key string) (any, bool)
}) []DecodedService {
	objs := cache.List()
	out := make([]DecodedService, 0, len(objs))
	for _, o := range objs {
		v, _ := cache.Value(o.Key())
		spec, _ := v.(*ServiceSpec)
		out = append(out, DecodedService{Object: o, Spec: spec})
	}
	return out
}
