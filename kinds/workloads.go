package kinds

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/homeostat/homeostat/object"
)

// ReplicaSetSpec keeps a number of identical pods.
type ReplicaSetSpec struct {
	Replicas        *int32                `json:"replicas,omitempty"`
	MinReadySeconds int32                 `json:"minReadySeconds,omitempty"`
	Selector        *object.LabelSelector `json:"selector"`
	Template        PodTemplate           `json:"template"`
}

// ReplicaSetStatus counts the pods.
type ReplicaSetStatus struct {
	Replicas             int32              `json:"replicas"`
	FullyLabeledReplicas int32              `json:"fullyLabeledReplicas,omitempty"`
	ReadyReplicas        int32              `json:"readyReplicas,omitempty"`
	AvailableReplicas    int32              `json:"availableReplicas,omitempty"`
	ObservedGeneration   int64              `json:"observedGeneration,omitempty"`
	Conditions           []object.Condition `json:"conditions,omitempty"`
}

// DeploymentSpec rolls ReplicaSets from one template to the next.
type DeploymentSpec struct {
	Replicas                *int32                `json:"replicas,omitempty"`
	Selector                *object.LabelSelector `json:"selector"`
	Template                PodTemplate           `json:"template"`
	Strategy                DeploymentStrategy    `json:"strategy,omitzero"`
	MinReadySeconds         int32                 `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit    *int32                `json:"revisionHistoryLimit,omitempty"`
	ProgressDeadlineSeconds *int32                `json:"progressDeadlineSeconds,omitempty"`
	Paused                  bool                  `json:"paused,omitempty"`
}

// DeploymentStrategy is Recreate or RollingUpdate.
type DeploymentStrategy struct {
	Type          string                 `json:"type,omitempty"`
	RollingUpdate *RollingUpdateStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStrategy bounds a rollout.
type RollingUpdateStrategy struct {
	MaxSurge       *IntOrString `json:"maxSurge,omitempty"`
	MaxUnavailable *IntOrString `json:"maxUnavailable,omitempty"`
}

// DeploymentStatus summarises the ReplicaSets.
type DeploymentStatus struct {
	ObservedGeneration  int64              `json:"observedGeneration,omitempty"`
	Replicas            int32              `json:"replicas,omitempty"`
	UpdatedReplicas     int32              `json:"updatedReplicas,omitempty"`
	ReadyReplicas       int32              `json:"readyReplicas,omitempty"`
	AvailableReplicas   int32              `json:"availableReplicas,omitempty"`
	UnavailableReplicas int32              `json:"unavailableReplicas,omitempty"`
	Conditions          []object.Condition `json:"conditions,omitempty"`
}

// DaemonSetSpec runs one pod per eligible node.
type DaemonSetSpec struct {
	Selector        *object.LabelSelector   `json:"selector"`
	Template        PodTemplate             `json:"template"`
	UpdateStrategy  DaemonSetUpdateStrategy `json:"updateStrategy,omitzero"`
	MinReadySeconds int32                   `json:"minReadySeconds,omitempty"`
}

// DaemonSetUpdateStrategy is RollingUpdate or OnDelete.
type DaemonSetUpdateStrategy struct {
	Type          string `json:"type,omitempty"`
	RollingUpdate *struct {
		MaxUnavailable *IntOrString `json:"maxUnavailable,omitempty"`
	} `json:"rollingUpdate,omitempty"`
}

// DaemonSetStatus counts per-node pods.
type DaemonSetStatus struct {
	ObservedGeneration     int64              `json:"observedGeneration,omitempty"`
	DesiredNumberScheduled int32              `json:"desiredNumberScheduled"`
	CurrentNumberScheduled int32              `json:"currentNumberScheduled"`
	NumberMisscheduled     int32              `json:"numberMisscheduled"`
	NumberReady            int32              `json:"numberReady"`
	NumberAvailable        int32              `json:"numberAvailable,omitempty"`
	UpdatedNumberScheduled int32              `json:"updatedNumberScheduled,omitempty"`
	Conditions             []object.Condition `json:"conditions,omitempty"`
}

// JobSpec runs pods to completion.
type JobSpec struct {
	Completions             *int32                `json:"completions,omitempty"`
	Parallelism             *int32                `json:"parallelism,omitempty"`
	BackoffLimit            *int32                `json:"backoffLimit,omitempty"`
	ActiveDeadlineSeconds   *int64                `json:"activeDeadlineSeconds,omitempty"`
	TTLSecondsAfterFinished *int32                `json:"ttlSecondsAfterFinished,omitempty"`
	Suspend                 bool                  `json:"suspend,omitempty"`
	Selector                *object.LabelSelector `json:"selector,omitempty"`
	Template                PodTemplate           `json:"template"`
}

// JobStatus counts the pods' outcomes.
type JobStatus struct {
	Active             int32              `json:"active,omitempty"`
	Ready              int32              `json:"ready,omitempty"`
	Succeeded          int32              `json:"succeeded,omitempty"`
	Failed             int32              `json:"failed,omitempty"`
	StartTime          *time.Time         `json:"startTime,omitempty"`
	CompletionTime     *time.Time         `json:"completionTime,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []object.Condition `json:"conditions,omitempty"`
}

// IntOrString holds 3 or "25%" (or a named port).
type IntOrString struct {
	IsString bool
	Int      int32
	Str      string
}

// MarshalJSON writes a number or a string.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.IsString {
		return []byte(strconv.Quote(v.Str)), nil
	}
	return []byte(strconv.Itoa(int(v.Int))), nil
}

// UnmarshalJSON reads a number or a string.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		s, err := strconv.Unquote(string(b))
		if err != nil {
			return err
		}
		*v = IntOrString{IsString: true, Str: s}
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil {
		return fmt.Errorf("not an integer or a string: %s", b)
	}
	*v = IntOrString{Int: int32(n)}
	return nil
}

// Scaled resolves an int or a percentage of total, rounding up or down.
func (v *IntOrString) Scaled(total int32, roundUp bool, def int32) int32 {
	if v == nil {
		return def
	}
	if !v.IsString {
		return v.Int
	}
	p, err := strconv.Atoi(strings.TrimSuffix(v.Str, "%"))
	if err != nil {
		return def
	}
	f := float64(p) * float64(total) / 100
	if roundUp {
		return int32(math.Ceil(f))
	}
	return int32(math.Floor(f))
}

// Int32 returns *p or def.
func Int32(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// Int64 returns *p or def.
func Int64(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

// Annotations that Kubernetes' own tools read: a ReplicaSet's revision
// among its Deployment's (kubectl rollout history and undo), and the change
// that made it.
const (
	AnnotationRevision    = "deployment.kubernetes.io/revision"
	AnnotationChangeCause = "kubernetes.io/change-cause"
	// LegacyAnnotationRevision and legacyAnnotationChangeCause are the keys
	// of earlier releases, still read from stored objects.
	LegacyAnnotationRevision    = "deployment.homeostat.io/revision"
	legacyAnnotationChangeCause = "homeostat.io/change-cause"
)

// Revision is a ReplicaSet's revision, 0 when it has none.
func Revision(m *object.Meta) int64 {
	v, ok := m.Annotations[AnnotationRevision]
	if !ok {
		v = m.Annotations[LegacyAnnotationRevision]
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// ChangeCause is the change-cause annotation of an object, if any.
func ChangeCause(m *object.Meta) string {
	if v, ok := m.Annotations[AnnotationChangeCause]; ok {
		return v
	}
	return m.Annotations[legacyAnnotationChangeCause]
}
