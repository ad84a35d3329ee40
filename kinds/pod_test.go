package kinds_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

func TestBoundNode(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
	}{
		{``, ""},
		{`{}`, ""},
		{`{"nodeName":"n1"}`, "n1"},
		{`{"containers":[{"name":"c","env":[{"name":"nodeName","value":"x"}]}],"nodeName":"n.2"}`, "n.2"},
		{`{"affinity":{"nodeName":"x"},"schedulerName":"s"}`, ""},
		{`{"nodeName":"\u00e9t\u00e9"}`, "été"},
		{`{"nodeName":7}`, ""},
		{`{"nodeName":`, ""},
		{`[]`, ""},
	} {
		o := &object.Object{Spec: json.RawMessage(tc.spec)}
		if got := kinds.BoundNode(o); got != tc.want {
			t.Errorf("BoundNode(%s) = %q, want %q", tc.spec, got, tc.want)
		}
		var spec kinds.PodSpec
		if tc.want != "" && (json.Unmarshal(o.Spec, &spec) != nil || spec.NodeName != tc.want) {
			t.Errorf("the spec %s decodes to node %q, BoundNode says %q", tc.spec, spec.NodeName, tc.want)
		}
	}
	if kinds.BoundNode(nil) != "" {
		t.Error("a nil pod is bound")
	}
}

func TestSameToAgent(t *testing.T) {
	pod := func(uid, spec, status string, deleted *time.Time) *object.Object {
		return &object.Object{Metadata: object.Meta{UID: uid, DeletionTimestamp: deleted}, Spec: json.RawMessage(spec), Status: json.RawMessage(status)}
	}
	t1, t2 := time.Unix(1e9, 0), time.Unix(2e9, 0)
	base := pod("u", `{"nodeName":"a"}`, `{"phase":"Pending"}`, nil)
	for _, tc := range []struct {
		name string
		a, b *object.Object
		want bool
	}{
		{"both nil", nil, nil, true},
		{"one nil", base, nil, false},
		{"status only", base, pod("u", `{"nodeName":"a"}`, `{"phase":"Running"}`, nil), true},
		{"spec", base, pod("u", `{"nodeName":"b"}`, `{"phase":"Pending"}`, nil), false},
		{"uid", base, pod("v", `{"nodeName":"a"}`, `{"phase":"Pending"}`, nil), false},
		{"deletion starts", base, pod("u", `{"nodeName":"a"}`, `{"phase":"Pending"}`, &t1), false},
		{"same deletion", pod("u", `{}`, ``, &t1), pod("u", `{}`, `{"phase":"Running"}`, &t1), true},
		{"another deletion time", pod("u", `{}`, ``, &t1), pod("u", `{}`, ``, &t2), false},
	} {
		if got := kinds.SameToAgent(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameToAgent = %v, want %v", tc.name, got, tc.want)
		}
	}
}
