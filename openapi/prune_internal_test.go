package openapi

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A member is found by its JSON name, in inlined members too, the first
// of a name winning; a type that is no struct has none.
func TestField(t *testing.T) {
	type inner struct {
		Shadowed int    `json:"name"`
		Deep     string `json:"deep"`
	}
	type outer struct {
		Name    string `json:"name"`
		inner   `json:",inline"`
		Skipped bool
		Tagged  float64 `json:"tagged,omitempty"`
	}
	cases := []struct {
		t    reflect.Type
		name string
		want reflect.Type
	}{
		{reflect.TypeFor[corev1.Pod](), "kind", reflect.TypeFor[string]()},
		{reflect.TypeFor[*corev1.Pod](), "metadata", reflect.TypeFor[metav1.ObjectMeta]()},
		{reflect.TypeFor[appsv1.Deployment](), "spec", reflect.TypeFor[appsv1.DeploymentSpec]()},
		{reflect.TypeFor[corev1.Pod](), "nonsense", nil},
		{reflect.TypeFor[outer](), "name", reflect.TypeFor[string]()},
		{reflect.TypeFor[outer](), "deep", reflect.TypeFor[string]()},
		{reflect.TypeFor[outer](), "tagged", reflect.TypeFor[float64]()},
		{reflect.TypeFor[outer](), "Skipped", nil},
		{reflect.TypeFor[[]corev1.Pod](), "kind", nil},
		{nil, "kind", nil},
	}
	for _, tc := range cases {
		for range 2 { // read, then remembered
			if got := field(tc.t, tc.name); got != tc.want {
				t.Errorf("field(%v, %q) = %v, want %v", tc.t, tc.name, got, tc.want)
			}
		}
	}
}
