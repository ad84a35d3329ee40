package object_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/homeostat/homeostat/object"
)

func TestCloneIsDeep(t *testing.T) {
	yes := true
	now := time.Now()
	grace := int64(5)
	o := &object.Object{APIVersion: "v1", Kind: "Pod", Spec: json.RawMessage(`{"a":1}`), Status: json.RawMessage(`{"b":2}`),
		Metadata: object.Meta{Name: "p", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			Finalizers: []string{"f"}, DeletionTimestamp: &now, DeletionGracePeriodSeconds: &grace,
			OwnerReferences: []object.OwnerReference{{Kind: "RS", Name: "r", UID: "u", Controller: &yes}}}}
	c := o.Clone()
	if diff := cmp.Diff(o, c); diff != "" {
		t.Fatalf("clone differs (-orig +clone):\n%s", diff)
	}
	c.Spec[2] = 'x'
	c.Metadata.Labels["a"] = "z"
	c.Metadata.Finalizers[0] = "g"
	*c.Metadata.OwnerReferences[0].Controller = false
	*c.Metadata.DeletionGracePeriodSeconds = 9
	if string(o.Spec) != `{"a":1}` || o.Metadata.Labels["a"] != "b" || o.Metadata.Finalizers[0] != "f" ||
		!*o.Metadata.OwnerReferences[0].Controller || *o.Metadata.DeletionGracePeriodSeconds != 5 {
		t.Fatalf("changing the clone changed the original: %+v", o)
	}
}

func TestSelector(t *testing.T) {
	for _, tc := range []struct {
		sel    string
		labels map[string]string
		want   bool
	}{
		{"", nil, true},
		{"a=b", map[string]string{"a": "b"}, true},
		{"a==b,c!=d", map[string]string{"a": "b", "c": "e"}, true},
		{"a!=b", map[string]string{}, true},
		{"a in (x, y),b", map[string]string{"a": "y", "b": ""}, true},
		{"a notin (x,y)", map[string]string{"a": "x"}, false},
		{"!a", map[string]string{"a": "1"}, false},
		{"tier", map[string]string{}, false},
	} {
		s, err := object.ParseSelector(tc.sel)
		if err != nil {
			t.Fatalf("%q: %v", tc.sel, err)
		}
		if got := s.Matches(tc.labels); got != tc.want {
			t.Errorf("%q on %v: got %v", tc.sel, tc.labels, got)
		}
	}
	for _, bad := range []string{"a in b", "=b", "a=b c", "a in (x y)"} {
		if _, err := object.ParseSelector(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestSameJSONAndEncoding: values compare equal whatever their key order
// and spacing; encodings compare equal when their bytes are, differ when
// their lengths do, and otherwise compare by value.
func TestSameJSONAndEncoding(t *testing.T) {
	for _, c := range []struct {
		a, b           string
		json, encoding bool
	}{
		{`{"a":1,"b":2}`, `{"a":1,"b":2}`, true, true},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true, true},
		{`{"a":1,"b":2}`, `{"a":1,"b":3}`, false, false},
		{`{"a":1, "b":2}`, `{"b":2,"a":1}`, true, false},
		{`{"a":"é"}`, `{"a":"\u00e9"}`, true, false},
		{``, `null`, true, false},
		{`{}`, `null`, true, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false, false},
		{`{"a":1000}`, `{"a":1e3}`, true, false},
		{`{"a":1.50}`, `{"a":1.5}`, true, false},
		{`{"a":9007199254740993}`, `{"a":9007199254740992}`, false, false},
		{`{"a":{"x":true,"y":null}}`, `{"a":{"y":null,"x":true}}`, true, true},
		{`{"a":1,"a":1}`, `{"a":1}`, false, false},
		{`{"a":1}`, `not json`, false, false},
	} {
		if got := object.SameJSON(json.RawMessage(c.a), json.RawMessage(c.b)); got != c.json {
			t.Errorf("SameJSON(%s, %s) = %v", c.a, c.b, got)
		}
		if got := object.SameEncoding([]byte(c.a), []byte(c.b)); got != c.encoding {
			t.Errorf("SameEncoding(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

func TestLabelSelectorRequires(t *testing.T) {
	for _, c := range []struct {
		name   string
		sel    *object.LabelSelector
		labels map[string]string
		want   bool
	}{
		{"every label asked for", &object.LabelSelector{MatchLabels: map[string]string{"app": "web", "hash": "1"}}, map[string]string{"app": "web", "hash": "1"}, true},
		{"more asked for than the labels", &object.LabelSelector{MatchLabels: map[string]string{"app": "web", "hash": "1"}}, map[string]string{"app": "web"}, true},
		{"a label not asked for", &object.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, map[string]string{"app": "web", "tier": "front"}, false},
		{"another value asked for", &object.LabelSelector{MatchLabels: map[string]string{"app": "api"}}, map[string]string{"app": "web"}, false},
		{"asked for by an expression only", &object.LabelSelector{MatchExpressions: []object.LabelSelectorRequirement{{Key: "app", Operator: "In", Values: []string{"web"}}}}, map[string]string{"app": "web"}, false},
		{"expressions beside", &object.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []object.LabelSelectorRequirement{{Key: "x", Operator: "Exists"}}}, map[string]string{"app": "web"}, true},
		{"no labels", &object.LabelSelector{}, nil, true},
		{"no selector", nil, map[string]string{"app": "web"}, false},
	} {
		if got := c.sel.Requires(c.labels); got != c.want {
			t.Errorf("%s: Requires = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSharingWith: a kept version shares the earlier version's bytes of
// each part that is the same, keeps its own of each that changed, and is
// equal to what it was made from; neither it nor the earlier version
// changes.
func TestSharingWith(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	prev := &object.Object{APIVersion: "v1", Kind: "ConfigMap", Spec: raw(`{"a":1}`), Status: raw(`{"s":1}`),
		Fields: map[string]json.RawMessage{"data": raw(`{"k":"v"}`), "binaryData": raw(`{"b":"AA=="}`)},
		Metadata: object.Meta{Name: "c", ResourceVersion: "1", ManagedFields: raw(`[{"manager":"m"}]`),
			Labels: map[string]string{"app": "a"}, Annotations: map[string]string{"note": "n"}}}
	sameBytes := func(a, b json.RawMessage) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }
	for _, tc := range []struct {
		name string
		next *object.Object
		// which parts should be prev's own bytes
		spec, managed, data, binary, labels, annotations bool
	}{
		{"a status write", &object.Object{APIVersion: "v1", Kind: "ConfigMap", Spec: raw(`{"a":1}`), Status: raw(`{"s":2}`),
			Fields: map[string]json.RawMessage{"data": raw(`{"k":"v"}`), "binaryData": raw(`{"b":"AA=="}`)},
			Metadata: object.Meta{Name: "c", ResourceVersion: "2", ManagedFields: raw(`[{"manager":"m"}]`),
				Labels: map[string]string{"app": "a"}, Annotations: map[string]string{"note": "n"}}}, true, true, true, true, true, true},
		{"a spec and a field changed", &object.Object{APIVersion: "v1", Kind: "ConfigMap", Spec: raw(`{"a":2}`), Status: raw(`{"s":1}`),
			Fields: map[string]json.RawMessage{"data": raw(`{"k":"w"}`), "binaryData": raw(`{"b":"AA=="}`)},
			Metadata: object.Meta{Name: "c", ResourceVersion: "2", ManagedFields: raw(`[{"manager":"n"}]`),
				Labels: map[string]string{"app": "b"}, Annotations: map[string]string{"note": "n"}}}, false, false, false, true, false, true},
		{"parts gone", &object.Object{APIVersion: "v1", Kind: "ConfigMap",
			Metadata: object.Meta{Name: "c", ResourceVersion: "2"}}, false, false, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.next.Clone()
			prevBefore := prev.Clone()
			got := tc.next.SharingWith(prev)
			if diff := cmp.Diff(before, got); diff != "" {
				t.Fatalf("the kept version differs from the written one (-written +kept):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.next); diff != "" {
				t.Fatalf("the written version changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(prevBefore, prev); diff != "" {
				t.Fatalf("the earlier version changed (-before +after):\n%s", diff)
			}
			sameMap := func(a, b map[string]string) bool {
				return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
			}
			if sameMap(got.Metadata.Labels, prev.Metadata.Labels) != tc.labels {
				t.Errorf("labels: shares the earlier version's map %v, want %v", !tc.labels, tc.labels)
			}
			if sameMap(got.Metadata.Annotations, prev.Metadata.Annotations) != tc.annotations {
				t.Errorf("annotations: shares the earlier version's map %v, want %v", !tc.annotations, tc.annotations)
			}
			for _, p := range []struct {
				what        string
				kept, prior json.RawMessage
				want        bool
			}{
				{"spec", got.Spec, prev.Spec, tc.spec},
				{"managed fields", got.Metadata.ManagedFields, prev.Metadata.ManagedFields, tc.managed},
				{"data", got.Fields["data"], prev.Fields["data"], tc.data},
				{"binaryData", got.Fields["binaryData"], prev.Fields["binaryData"], tc.binary},
			} {
				if sameBytes(p.kept, p.prior) != p.want {
					t.Errorf("%s: shares the earlier version's bytes %v, want %v", p.what, !p.want, p.want)
				}
			}
		})
	}
}
