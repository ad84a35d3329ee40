package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/object"
)

// A Deployment as a Kubernetes client may send it: a field Kubernetes has
// and Homeostat does not act on (dnsPolicy), an image, a field nobody has
// (spec.bogus) and a key given twice (spec.replicas).
const kubernetesDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"NAME"},
 "spec":{"replicas":1,"replicas":2,"bogus":true,"selector":{"matchLabels":{"app":"a"}},
  "template":{"metadata":{"labels":{"app":"a"},"creationTimestamp":null},"spec":{"dnsPolicy":"ClusterFirst",
   "containers":[{"name":"c","image":"nginx","command":["sleep","1"],"resources":{}}]}}}}`

func TestFieldValidation(t *testing.T) {
	base := startAPI(t, conn(t))
	coll := base + "/apis/apps/v1/namespaces/default/deployments"
	ignored := `spec.template.spec.dnsPolicy: Homeostat does not act on this field; it was not stored`
	image := `spec.template.spec.containers[0].image: stored and shown, but a process pod runs its command, not an image`
	unknown, dup := `unknown field \"spec.bogus\"`, `duplicate field \"spec.replicas\"`
	cases := []struct {
		name, query string
		code        int
		warnings    []string
		causes      []string
	}{
		{"strict refuses unknown and duplicate fields only", "?fieldValidation=Strict", http.StatusBadRequest,
			[]string{ignored, image}, []string{"spec.bogus", "spec.replicas"}},
		{"warn is the default", "", http.StatusCreated, []string{ignored, image, unknown, dup}, nil},
		{"warn", "?fieldValidation=Warn", http.StatusCreated, []string{ignored, image, unknown, dup}, nil},
		{"ignore still names what Homeostat does not act on", "?fieldValidation=Ignore", http.StatusCreated, []string{ignored, image}, nil},
		{"a directive Kubernetes does not define", "?fieldValidation=Loose", http.StatusBadRequest, nil, nil},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "d" + string(rune('a'+i))
			r := call(t, "POST", coll+tc.query, "application/json", strings.ReplaceAll(kubernetesDeployment, "NAME", name))
			if r.code != tc.code {
				t.Fatalf("got %d (%s), want %d", r.code, r.body, tc.code)
			}
			var got []string
			for _, w := range r.header.Values("Warning") {
				got = append(got, strings.TrimSuffix(strings.TrimPrefix(w, `299 - "`), `"`))
			}
			if !slices.Equal(got, tc.warnings) {
				t.Errorf("warnings:\n got %q\nwant %q", got, tc.warnings)
			}
			if r.code != http.StatusCreated {
				var fields []string
				if r.status.Details != nil {
					for _, c := range r.status.Details.Causes {
						fields = append(fields, c.Field)
					}
				}
				if !slices.Equal(fields, tc.causes) {
					t.Errorf("causes %q, want %q", fields, tc.causes)
				}
				mustCode(t, call(t, "GET", coll+"/"+name, "", ""), http.StatusNotFound, object.ReasonNotFound)
				return
			}
			spec := string(r.obj.Spec)
			if strings.Contains(spec, "dnsPolicy") || strings.Contains(spec, "bogus") || !strings.Contains(spec, `"replicas":2`) || !strings.Contains(spec, `"image":"nginx"`) {
				t.Errorf("stored spec: %s", spec)
			}
		})
	}
	// Unknown fields at the top level and in metadata are named too, and
	// a patch is checked as its result.
	r := call(t, "POST", coll+"?fieldValidation=Strict", "application/json",
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","colour":"red"},"extra":1,
		 "spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","command":["x"]}]}}}}`)
	mustCode(t, r, http.StatusBadRequest, object.ReasonBadRequest)
	if !strings.Contains(r.status.Message, `unknown field "extra"`) || !strings.Contains(r.status.Message, `unknown field "metadata.colour"`) {
		t.Errorf("message: %s", r.status.Message)
	}
	p := call(t, "PATCH", coll+"/db?fieldValidation=Strict", "application/strategic-merge-patch+json", `{"spec":{"template":{"spec":{"hostNetwork":true}}}}`)
	mustCode(t, p, http.StatusOK, "")
	if !slices.ContainsFunc(p.header.Values("Warning"), func(w string) bool {
		return strings.Contains(w, "spec.template.spec.hostNetwork: Homeostat does not act")
	}) {
		t.Errorf("patch warnings: %q", p.header.Values("Warning"))
	}
	mustCode(t, call(t, "PATCH", coll+"/db?fieldValidation=Strict", "application/merge-patch+json", `{"spec":{"nonsense":1}}`), http.StatusBadRequest, object.ReasonBadRequest)
}
