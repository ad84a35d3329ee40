package kinds

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
