// Package kinds holds typed views of the built-in kinds' spec and status,
// for the code that acts on them (controllers, scheduler, node agents). The
// JSON Schemas in package schemas are the authority on what is valid; these
// types decode what validation let through.
package kinds

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/homeostat/homeostat/object"
)

// PodSpec is a Pod's desired state; containers are OS processes.
type PodSpec struct {
	Containers                    Containers                 `json:"containers"`
	InitContainers                Containers                 `json:"initContainers,omitempty"`
	RestartPolicy                 string                     `json:"restartPolicy,omitempty"`
	TerminationGracePeriodSeconds *int64                     `json:"terminationGracePeriodSeconds,omitempty"`
	ActiveDeadlineSeconds         *int64                     `json:"activeDeadlineSeconds,omitempty"`
	NodeName                      string                     `json:"nodeName,omitempty"`
	NodeSelector                  map[string]string          `json:"nodeSelector,omitempty"`
	Tolerations                   []Toleration               `json:"tolerations,omitempty"`
	Affinity                      *Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints     []TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	SchedulerName                 string                     `json:"schedulerName,omitempty"`
	Priority                      *int32                     `json:"priority,omitempty"`
	Hostname                      string                     `json:"hostname,omitempty"`
	SecurityContext               *SecurityContext           `json:"securityContext,omitempty"`
	Volumes                       []Volume                   `json:"volumes,omitempty"`
}

// SecurityContext says whom a container's process runs as; a container's
// own fields override its pod's.
type SecurityContext struct {
	RunAsUser    *int64 `json:"runAsUser,omitempty"`
	RunAsGroup   *int64 `json:"runAsGroup,omitempty"`
	RunAsNonRoot *bool  `json:"runAsNonRoot,omitempty"`
}

// Restart policies.
const (
	RestartAlways    = "Always"
	RestartOnFailure = "OnFailure"
	RestartNever     = "Never"
)

// Containers are a pod's containers, or its init containers. The pods of
// one template have the same ones, byte for byte, and they are most of
// what decoding a pod's spec costs and keeps: equal ones decoded lately
// are decoded once and shared, read-only, as every decoded part of a
// cached object is.
type Containers []Container

// sharedContainers holds the containers decoded lately: those of many
// templates, and of every pod of each. Its values are plain slices, as
// decoding a Containers would come back here.
var sharedContainers = object.NewSharedDecoder[[]Container](2<<20, 64<<10)

// UnmarshalJSON decodes the containers, or gives the ones decoded from
// the same bytes before.
func (c *Containers) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = nil
		return nil
	}
	v, err := sharedContainers.Decode(b)
	if err != nil {
		return err
	}
	// No room to grow: an append to one pod's copies.
	*c = v[:len(v):len(v)]
	return nil
}

// Container is one process of a pod.
type Container struct {
	Name           string               `json:"name"`
	Image          string               `json:"image,omitempty"`
	Command        []string             `json:"command"`
	Args           []string             `json:"args,omitempty"`
	Env            []EnvVar             `json:"env,omitempty"`
	EnvFrom        []EnvFromSource      `json:"envFrom,omitempty"`
	VolumeMounts   []VolumeMount        `json:"volumeMounts,omitempty"`
	WorkingDir     string               `json:"workingDir,omitempty"`
	Ports          []ContainerPort      `json:"ports,omitempty"`
	Resources      ResourceRequirements `json:"resources,omitzero"`
	LivenessProbe  *Probe               `json:"livenessProbe,omitempty"`
	ReadinessProbe *Probe               `json:"readinessProbe,omitempty"`
	StartupProbe   *Probe               `json:"startupProbe,omitempty"`
	// SecurityContext overrides the pod's, field by field.
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`
}

// EnvVar is one environment variable: a value, or where to find it.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// ContainerPort is a port a container listens on. A container's processes
// share the node's network, so the port is the node's: ContainerPort 0
// asks the node for a free one, and HostPort, when set, equals it.
type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
	HostPort      int32  `json:"hostPort,omitempty"`
	Protocol      string `json:"protocol,omitempty"`
}

// ResourceRequirements are requests (what the scheduler reserves) and
// limits (what the runtime enforces where it can).
type ResourceRequirements struct {
	Requests ResourceList `json:"requests,omitempty"`
	Limits   ResourceList `json:"limits,omitempty"`
}

// Probe checks a container: exactly one of Exec, HTTPGet, TCPSocket.
type Probe struct {
	Exec                *ExecAction      `json:"exec,omitempty"`
	HTTPGet             *HTTPGetAction   `json:"httpGet,omitempty"`
	TCPSocket           *TCPSocketAction `json:"tcpSocket,omitempty"`
	InitialDelaySeconds int32            `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int32            `json:"periodSeconds,omitempty"`
	TimeoutSeconds      int32            `json:"timeoutSeconds,omitempty"`
	SuccessThreshold    int32            `json:"successThreshold,omitempty"`
	FailureThreshold    int32            `json:"failureThreshold,omitempty"`
}

// ExecAction runs a command; exit 0 is success.
type ExecAction struct {
	Command []string `json:"command"`
}

// HTTPGetAction is an HTTP GET; 200–399 is success.
type HTTPGetAction struct {
	Path        string       `json:"path,omitempty"`
	Port        IntOrString  `json:"port"`
	Host        string       `json:"host,omitempty"`
	Scheme      string       `json:"scheme,omitempty"`
	HTTPHeaders []HTTPHeader `json:"httpHeaders,omitempty"`
}

// HTTPHeader is one header of an HTTP probe.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// TCPSocketAction opens a TCP connection; connecting is success.
type TCPSocketAction struct {
	Port IntOrString `json:"port"`
	Host string      `json:"host,omitempty"`
}

// Toleration lets a pod onto a node with a matching taint.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// Affinity holds node affinity and pod anti-affinity.
type Affinity struct {
	NodeAffinity    *NodeAffinity    `json:"nodeAffinity,omitempty"`
	PodAntiAffinity *PodAntiAffinity `json:"podAntiAffinity,omitempty"`
}

// NodeAffinity constrains the nodes a pod may run on.
type NodeAffinity struct {
	Required  *NodeSelector             `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	Preferred []PreferredSchedulingTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// NodeSelector is an OR of terms.
type NodeSelector struct {
	Terms []NodeSelectorTerm `json:"nodeSelectorTerms"`
}

// NodeSelectorTerm is an AND of expressions.
type NodeSelectorTerm struct {
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// NodeSelectorRequirement is one expression over node labels.
type NodeSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// PreferredSchedulingTerm weighs a term in scoring.
type PreferredSchedulingTerm struct {
	Weight     int32            `json:"weight"`
	Preference NodeSelectorTerm `json:"preference"`
}

// PodAntiAffinity keeps pods apart.
type PodAntiAffinity struct {
	Required  []PodAffinityTerm         `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	Preferred []WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// PodAffinityTerm selects pods within a topology domain.
type PodAffinityTerm struct {
	LabelSelector *object.LabelSelector `json:"labelSelector,omitempty"`
	TopologyKey   string                `json:"topologyKey"`
	Namespaces    []string              `json:"namespaces,omitempty"`
}

// WeightedPodAffinityTerm weighs a term in scoring.
type WeightedPodAffinityTerm struct {
	Weight          int32           `json:"weight"`
	PodAffinityTerm PodAffinityTerm `json:"podAffinityTerm"`
}

// TopologySpreadConstraint spreads matching pods across domains.
type TopologySpreadConstraint struct {
	MaxSkew           int32                 `json:"maxSkew"`
	TopologyKey       string                `json:"topologyKey"`
	WhenUnsatisfiable string                `json:"whenUnsatisfiable"`
	LabelSelector     *object.LabelSelector `json:"labelSelector,omitempty"`
}

// Pod phases.
const (
	PodPending   = "Pending"
	PodRunning   = "Running"
	PodSucceeded = "Succeeded"
	PodFailed    = "Failed"
	PodUnknown   = "Unknown"
)

// Pod condition types.
const (
	PodScheduled    = "PodScheduled"
	PodInitialized  = "Initialized"
	ContainersReady = "ContainersReady"
	PodReady        = "Ready"
)

// PodStatus is what the node agent (and the scheduler) observe.
type PodStatus struct {
	Phase                 string             `json:"phase,omitempty"`
	Conditions            []object.Condition `json:"conditions,omitempty"`
	HostIP                string             `json:"hostIP,omitempty"`
	PodIP                 string             `json:"podIP,omitempty"`
	StartTime             *time.Time         `json:"startTime,omitempty"`
	Reason                string             `json:"reason,omitempty"`
	Message               string             `json:"message,omitempty"`
	ContainerStatuses     []ContainerStatus  `json:"containerStatuses,omitempty"`
	InitContainerStatuses []ContainerStatus  `json:"initContainerStatuses,omitempty"`
	ObservedGeneration    int64              `json:"observedGeneration,omitempty"`
}

// ContainerStatus reports one container's process.
type ContainerStatus struct {
	Name                 string         `json:"name"`
	State                ContainerState `json:"state"`
	LastTerminationState ContainerState `json:"lastState,omitzero"`
	Ready                bool           `json:"ready"`
	Started              *bool          `json:"started,omitempty"`
	RestartCount         int32          `json:"restartCount"`
	Image                string         `json:"image,omitempty"`
	PID                  int            `json:"pid,omitempty"`
	// Ports are the container's ports as its node gave them: a port
	// declared without a number (containerPort 0) has the one picked for it.
	Ports []ContainerPort `json:"ports,omitempty"`
}

// ContainerState is exactly one of waiting, running, terminated.
type ContainerState struct {
	Waiting    *StateWaiting    `json:"waiting,omitempty"`
	Running    *StateRunning    `json:"running,omitempty"`
	Terminated *StateTerminated `json:"terminated,omitempty"`
}

// StateWaiting: not running, with the reason (CrashLoopBackOff, …).
type StateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// StateRunning: running since StartedAt.
type StateRunning struct {
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// StateTerminated: exited.
type StateTerminated struct {
	ExitCode   int32     `json:"exitCode"`
	Signal     int32     `json:"signal,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Message    string    `json:"message,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// PodTemplate is the pod part of a workload's spec.
type PodTemplate struct {
	Metadata TemplateMeta `json:"metadata,omitzero"`
	Spec     PodSpec      `json:"spec"`
}

// TemplateMeta is the metadata a template gives its pods.
type TemplateMeta struct {
	Name        string            `json:"name,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Pod is a decoded Pod object.
type Pod struct {
	*object.Object
	// Spec is shared by the pods decoded lately from equal specs, so
	// read-only, as every decoded part of a cached object is: a change is
	// made to a copy. Never nil in a decoded pod.
	Spec   *PodSpec
	Status PodStatus
}

// sharedSpecs holds the pod specs decoded lately. Every pod of a template
// has one spec until it is bound, and those bound to one node alike
// after: at 100,000 pods on 5,000 nodes, twenty share each. A spec's own
// fields (the struct, its node's name, its tolerations) took 300 to 400
// bytes a pod in each process caching pods.
var sharedSpecs = object.NewSharedDecoder[*PodSpec](4<<20, 4<<10)

// DecodePodSpec decodes o's spec as a pod's, or gives the one decoded
// from the same bytes lately, which is shared: read-only.
func DecodePodSpec(o *object.Object) (*PodSpec, error) {
	if len(o.Spec) == 0 {
		return &PodSpec{}, nil
	}
	s, err := sharedSpecs.Decode(o.Spec)
	if err != nil {
		return nil, err
	}
	if s == nil { // a spec of null
		return &PodSpec{}, nil
	}
	return s, nil
}

// DecodePod decodes a Pod's spec and status.
func DecodePod(o *object.Object) (*Pod, error) {
	spec, err := DecodePodSpec(o)
	if err != nil {
		return nil, err
	}
	p := &Pod{Object: o, Spec: spec}
	if err := o.DecodeStatus(&p.Status); err != nil {
		return nil, err
	}
	return p, nil
}

// Terminal reports whether the pod has finished for good.
func (p *Pod) Terminal() bool { return p.Status.Phase == PodSucceeded || p.Status.Phase == PodFailed }

// Active: neither finished nor being deleted.
func (p *Pod) Active() bool { return !p.Terminal() && !p.Metadata.Deleting() }

// Ready reports the Ready condition.
func (p *Pod) Ready() bool {
	c := object.FindCondition(p.Status.Conditions, PodReady)
	return c != nil && c.Status == object.ConditionTrue
}

// AvailableAt is when the pod became ready, if it is.
func (p *Pod) ReadySince() (time.Time, bool) {
	c := object.FindCondition(p.Status.Conditions, PodReady)
	if c == nil || c.Status != object.ConditionTrue {
		return time.Time{}, false
	}
	return c.LastTransitionTime, true
}

// Restarts sums the containers' restart counts.
func (p *Pod) Restarts() int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// PodOrNil decodes o as a Pod, or returns nil when it is not one: the
// decoder that informers keep pods with, once per change.
func PodOrNil(o *object.Object) any {
	p, err := DecodePod(o)
	if err != nil {
		return nil
	}
	return p
}

// PodAfter is the decoder the controllers keep pods with (a
// reconcile.Decoder): o decoded, reusing the decoded spec of the pod's
// previous version old when o's spec is byte for byte old's, as after a
// status write. A pod's status is written more often than its spec, and
// its spec is the larger half to decode. Of the status it keeps what a
// pod's owners read: its phase, reason and addresses, its Ready
// condition alone (readyOnly), and the statuses of the containers that
// restarted, were given ports or ended (ownersContainers); not its host,
// its start or its init containers. Equal Ready conditions are one list
// (object.ShareConditions), and a phase this package names its constant.
func PodAfter(o, old *object.Object, oldValue any) any {
	p := specAfter(o, old, oldValue)
	if p == nil || o.DecodeStatus(&p.Status) != nil {
		return nil
	}
	st := &p.Status
	st.Phase = knownPhase(st.Phase)
	st.Conditions = object.ShareConditions(readyOnly(st.Conditions))
	st.ContainerStatuses = ownersContainers(st.ContainerStatuses)
	st.HostIP, st.StartTime, st.InitContainerStatuses = "", nil, nil
	return p
}

// ownersContainers is what a pod's owners read of its containers'
// statuses: restarts (Restarts), ports as given (PortNumber) and how
// they ended (a Job's backoff). A container with none of these is left
// out, the others kept whole, in order. A running container's status,
// its state, image and start, took some 200 bytes a pod in the
// controllers' cache.
func ownersContainers(cs []ContainerStatus) []ContainerStatus {
	read := func(c *ContainerStatus) bool {
		return c.RestartCount != 0 || len(c.Ports) > 0 || c.State.Terminated != nil || c.LastTerminationState.Terminated != nil
	}
	n := 0
	for i := range cs {
		if read(&cs[i]) {
			n++
		}
	}
	switch n {
	case len(cs):
		return cs
	case 0:
		return nil
	}
	out := make([]ContainerStatus, 0, n)
	for i := range cs {
		if read(&cs[i]) {
			out = append(out, cs[i])
		}
	}
	return out
}

// readyOnly is the Ready condition of conds alone, in a slice of its
// own. Of a pod's conditions its owners read Ready alone (Ready,
// ReadySince), and a running pod's four conditions were the largest part
// of its decoded status in the controllers' cache.
func readyOnly(conds []object.Condition) []object.Condition {
	c := object.FindCondition(conds, PodReady)
	switch {
	case c == nil:
		return nil
	case len(conds) == 1:
		return conds
	}
	return []object.Condition{*c}
}

// PodPhaseAfter is PodAfter for a reader that needs no more of a bound
// pod's status than its phase (the scheduler, which learns from it that a
// finished pod frees its node): a pod bound to a node has a status with
// its phase alone, where its agent's conditions and container statuses
// were a third of what a cache of bound pods kept. An unbound pod's
// status is whole. Of a bound pod's status only the phase is checked:
// the rest is read as JSON, not as a pod's status.
func PodPhaseAfter(o, old *object.Object, oldValue any) any {
	p := specAfter(o, old, oldValue)
	if p == nil {
		return nil
	}
	if p.Spec.NodeName == "" {
		if o.DecodeStatus(&p.Status) != nil {
			return nil
		}
		return p
	}
	// A status may come from a node's agent as it wrote it, unchecked.
	phase, ok := topString(o.Status, "phase", false)
	if !ok {
		return nil
	}
	p.Status.Phase = knownPhase(phase)
	return p
}

// specAfter is o with its spec decoded, or reused from oldValue when old
// is what oldValue decoded and its spec is o's byte for byte; nil when
// the spec does not decode.
func specAfter(o, old *object.Object, oldValue any) *Pod {
	if prev, ok := oldValue.(*Pod); ok && old != nil && prev.Object == old && bytes.Equal(o.Spec, old.Spec) {
		return &Pod{Object: o, Spec: prev.Spec}
	}
	spec, err := DecodePodSpec(o)
	if err != nil {
		return nil
	}
	return &Pod{Object: o, Spec: spec}
}

// BoundNode is the node a pod is bound to ("" when none, or when o is
// nil). It reads the spec's top level without decoding the rest, as a
// host of many nodes does for every pod change.
func BoundNode(o *object.Object) string {
	if o == nil {
		return ""
	}
	// A spec is written by the API, which stores no duplicate names, and
	// by the controllers and the scheduler: its first nodeName is its one,
	// and the rest need not be read (it was two fifths of the cost).
	n, _ := topString(o.Spec, "nodeName", true)
	return n
}

// BoundNodeOf is the node o is bound to, read from the pod as decoded
// (PodAfter, PodPhaseAfter) when value is that, else as BoundNode reads
// it from the JSON.
func BoundNodeOf(o *object.Object, value any) string {
	if p, ok := value.(*Pod); ok && p != nil && p.Object == o {
		return p.Spec.NodeName
	}
	return BoundNode(o)
}

// BoundNodeIndex files a pod under the node it is bound to, none while
// unbound: the index by node that the scheduler and the controllers keep
// (a reconcile.ValueIndexFunc), read as BoundNodeOf reads it.
func BoundNodeIndex(o *object.Object, value any) []string {
	if n := BoundNodeOf(o, value); n != "" {
		return []string{n}
	}
	return nil
}

// topString reads the string member name of a JSON object without
// decoding the rest, by the rules a decoding into a struct follows: names
// match whatever their case, the last match wins, and null leaves what
// was read before. "" when it is absent; false when raw is not an object
// (empty raw and null are taken as an empty one) or the member is neither
// a string nor null. With first, the first match is taken and the rest
// is not read, for JSON that has no two members of one name.
func topString(raw []byte, name string, first bool) (string, bool) {
	if len(raw) == 0 {
		return "", true
	}
	r := specReaders.Get().(*specReader)
	defer specReaders.Put(r)
	r.src.Reset(raw)
	// Duplicate names are not checked, the last is taken: checking them
	// was half of what reading cost.
	r.dec.Reset(&r.src, jsontext.AllowDuplicateNames(true))
	d := &r.dec
	switch tok, err := d.ReadToken(); {
	case err != nil:
		return "", false
	case tok.Kind() == 'n':
		return "", true
	case tok.Kind() != '{':
		return "", false
	}
	var out string
	for d.PeekKind() == '"' {
		n, err := d.ReadToken()
		if err != nil {
			return "", false
		}
		if !strings.EqualFold(n.String(), name) {
			if d.SkipValue() != nil {
				return "", false
			}
			continue
		}
		switch v, err := d.ReadToken(); {
		case err != nil:
			return "", false
		case v.Kind() == '"':
			out = v.String()
			if first {
				return out, true
			}
		case v.Kind() != 'n':
			return "", false
		}
	}
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '}' {
		return "", false
	}
	return out, true
}

// specReader reads a spec's top level; they are kept for reuse, as their
// buffers are most of what reading one allocates.
type specReader struct {
	src bytes.Reader
	dec jsontext.Decoder
}

var specReaders = sync.Pool{New: func() any { return new(specReader) }}

// SameToAgent reports whether two states of a pod (either nil) differ
// only in what its node's agent does not act on: it acts on which pod it
// is, whether it is being deleted, and its spec, not on its status.
func SameToAgent(a, b *object.Object) bool {
	if a == nil || b == nil {
		return a == b
	}
	da, db := a.Metadata.DeletionTimestamp, b.Metadata.DeletionTimestamp
	return a.Metadata.UID == b.Metadata.UID && (da == nil) == (db == nil) && (da == nil || da.Equal(*db)) && bytes.Equal(a.Spec, b.Spec)
}

// PortNumber is the number of the pod's port named name, of protocol
// (TCP when ""): as its node gave it, for a port declared without one,
// else as declared; false when no port of that name has a number yet.
func (p *Pod) PortNumber(name, protocol string) (int32, bool) {
	same := func(cp ContainerPort) bool {
		return cp.Name == name && cp.ContainerPort > 0 && Protocol(cp.Protocol) == Protocol(protocol)
	}
	for _, cs := range p.Status.ContainerStatuses {
		for _, cp := range cs.Ports {
			if same(cp) {
				return cp.ContainerPort, true
			}
		}
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if same(cp) {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// Protocol is a port's protocol, TCP when it names none, as Kubernetes
// defaults it.
func Protocol(protocol string) string {
	if protocol == "" {
		return "TCP"
	}
	return protocol
}
