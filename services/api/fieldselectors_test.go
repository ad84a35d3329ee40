package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/homeostat/homeostat/object"
)

func TestFieldSelectorsAsKubernetesDefinesThem(t *testing.T) {
	base := startAPI(t, conn(t))
	pods := base + "/api/v1/namespaces/default/pods"
	for _, p := range []string{
		`{"metadata":{"name":"a"},"spec":{"nodeName":"n1","containers":[{"name":"c","command":["x"]}]}}`,
		`{"metadata":{"name":"b"},"spec":{"nodeName":"n2","containers":[{"name":"c","command":["x"]}]}}`,
	} {
		mustCode(t, call(t, "POST", pods, "application/json", p), http.StatusCreated, "")
	}
	events := base + "/api/v1/namespaces/default/events"
	mustCode(t, call(t, "POST", events, "application/json",
		`{"metadata":{"name":"e1"},"involvedObject":{"kind":"Pod","name":"a"},"reason":"Started","source":{"component":"agent"}}`), http.StatusCreated, "")
	names := func(r response) []string {
		var l object.List
		_ = json.Unmarshal(r.body, &l)
		var out []string
		for _, o := range l.Items {
			out = append(out, o.Metadata.Name)
		}
		return out
	}
	cases := []struct {
		coll, selector string
		code           int
		want           []string
	}{
		{pods, "spec.nodeName=n1", http.StatusOK, []string{"a"}},
		{pods, "spec.nodeName!=n1", http.StatusOK, []string{"b"}},
		{pods, "metadata.name==b,spec.nodeName=n2", http.StatusOK, []string{"b"}},
		{pods, "status.phase=Running", http.StatusOK, nil},
		{pods, "spec.containers", http.StatusBadRequest, nil},
		{pods, "spec.priority=1", http.StatusBadRequest, nil},
		{events, "involvedObject.name=a,reason=Started", http.StatusOK, []string{"e1"}},
		{events, "source=agent", http.StatusOK, []string{"e1"}},
		{events, "message=x", http.StatusBadRequest, nil},
	}
	for _, tc := range cases {
		r := call(t, "GET", tc.coll+"?fieldSelector="+url.QueryEscape(tc.selector), "", "")
		if r.code != tc.code {
			t.Errorf("%s: got %d (%s), want %d", tc.selector, r.code, r.body, tc.code)
			continue
		}
		if got := names(r); tc.code == http.StatusOK && !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.selector, got, tc.want)
		}
	}
}
