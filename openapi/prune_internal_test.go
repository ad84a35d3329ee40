package openapi

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
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
	type innerFirst struct {
		inner `json:",inline"`
		Name  string `json:"name"`
	}
	type byPointer struct {
		*inner
	}
	type self struct {
		N string `json:"n"`
		*self
	}
	_ = self{}.self // only the type is read
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
		// A member named "" finds the first member without a name.
		{reflect.TypeFor[corev1.Pod](), "", reflect.TypeFor[metav1.TypeMeta]()},
		{reflect.TypeFor[outer](), "", reflect.TypeFor[inner]()},
		{reflect.TypeFor[innerFirst](), "name", reflect.TypeFor[int]()},
		{reflect.TypeFor[byPointer](), "deep", reflect.TypeFor[string]()},
		{reflect.TypeFor[self](), "n", reflect.TypeFor[string]()},
		{reflect.TypeFor[self](), "m", nil},
	}
	for _, tc := range cases {
		for range 2 { // read, then remembered
			if got := field(tc.t, tc.name); got != tc.want {
				t.Errorf("field(%v, %q) = %v, want %v", tc.t, tc.name, got, tc.want)
			}
		}
	}
}

// A reference is looked up by its text without the prefix, escapes and
// all, whether or not its fragment is read directly.
func TestRefName(t *testing.T) {
	for _, ref := range []string{
		"#/components/schemas/io.k8s.api.core.v1.Pod",
		"#/components/schemas/io.homeostat.custom.w0.example.com.My%20thing",
		"#/components/schemas/caf%C3%A9",
		"#/components/schemas/raw é",
		"#/components/schemas/a%2Fb",
		"#/components/schemas/per%25cent",
		"#/definitions/io.k8s.api.core.v1.Pod",
		"other.json#/components/schemas/X",
		"?#/components/schemas/X",
		"//u@h#/components/schemas/X",
		"#",
	} {
		r := spec.MustCreateRef(ref)
		if got, want := refName(&r), strings.TrimPrefix(r.String(), refPrefix); got != want {
			t.Errorf("refName(%q) = %q, want %q", ref, got, want)
		}
		if !hasRef(&r) && r.String() != "" {
			t.Errorf("hasRef(%q) = false", ref)
		}
	}
	var none spec.Ref
	if hasRef(&none) {
		t.Error("an empty reference refers to something")
	}
}

// A schema's properties are its own, each made once for every pruning
// that reaches the schema, and none for a schema without properties.
func TestPropertiesMadeOnce(t *testing.T) {
	var props sync.Map
	w := pruner{props: &props}
	s := &spec.Schema{SchemaProps: spec.SchemaProps{Properties: map[string]spec.Schema{
		"name": *spec.StringProperty(),
		"spec": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"},
			Properties: map[string]spec.Schema{"replicas": *spec.Int64Property()}}},
	}}}
	first := w.properties(s)
	if len(first) != len(s.Properties) {
		t.Fatalf("%d properties, want %d", len(first), len(s.Properties))
	}
	for name, prop := range s.Properties {
		if !reflect.DeepEqual(*first[name], prop) {
			t.Errorf("property %s is %+v, want %+v", name, *first[name], prop)
		}
	}
	again := w.properties(s)
	for name := range s.Properties {
		if first[name] != again[name] {
			t.Errorf("property %s made twice", name)
		}
	}
	// A property's own properties hang off the one made.
	if inner, again := w.properties(first["spec"]), w.properties(first["spec"]); inner["replicas"] == nil || inner["replicas"] != again["replicas"] {
		t.Errorf("the properties of spec: %v, then %v", inner, again)
	}
	if got := w.properties(&spec.Schema{}); len(got) != 0 {
		t.Errorf("a schema without properties has %v", got)
	}
}
