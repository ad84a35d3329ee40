package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/homeostat/homeostat/object"
)

type scaleBody struct {
	Kind     string      `json:"kind"`
	Metadata object.Meta `json:"metadata"`
	Spec     struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
	Status struct {
		Selector string `json:"selector"`
	} `json:"status"`
}

func readScale(t *testing.T, r response) scaleBody {
	t.Helper()
	var sc scaleBody
	if err := json.Unmarshal(r.body, &sc); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return sc
}

func TestScaleSubresource(t *testing.T) {
	base := startAPI(t, conn(t))
	coll := base + "/apis/apps/v1/namespaces/default/deployments"
	mustCode(t, call(t, "POST", coll, "application/json", deploy("web", "front")), http.StatusCreated, "")
	r := call(t, "GET", coll+"/web/scale", "", "")
	mustCode(t, r, http.StatusOK, "")
	sc := readScale(t, r)
	if sc.Kind != "Scale" || sc.Spec.Replicas != 2 || sc.Status.Selector != "app=web" {
		t.Fatalf("scale: %s", r.body)
	}
	// kubectl scale sends a merge patch; an autoscaler a PUT.
	r = call(t, "PATCH", coll+"/web/scale", "application/merge-patch+json", `{"spec":{"replicas":5}}`)
	mustCode(t, r, http.StatusOK, "")
	if got := readScale(t, r).Spec.Replicas; got != 5 {
		t.Fatalf("replicas after the patch: %d", got)
	}
	put := fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","resourceVersion":%q},"spec":{"replicas":7}}`, sc.Metadata.ResourceVersion)
	mustCode(t, call(t, "PUT", coll+"/web/scale", "application/json", put), http.StatusConflict, object.ReasonConflict)
	mustCode(t, call(t, "PATCH", coll+"/web/scale", "application/merge-patch+json", `{"spec":{"replicas":-1}}`), http.StatusUnprocessableEntity, object.ReasonInvalid)
	r = call(t, "PUT", coll+"/web/scale", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":0}}`)
	mustCode(t, r, http.StatusOK, "")
	got := call(t, "GET", coll+"/web", "", "")
	var spec struct{ Replicas int32 }
	_ = json.Unmarshal(got.obj.Spec, &spec)
	if spec.Replicas != 0 || got.obj.Metadata.Generation != 3 {
		t.Fatalf("the Deployment after scaling: replicas %d, generation %d", spec.Replicas, got.obj.Metadata.Generation)
	}
	mustCode(t, call(t, "GET", base+"/api/v1/namespaces/default/pods/p/scale", "", ""), http.StatusNotFound, object.ReasonNotFound)
	mustCode(t, call(t, "GET", coll+"/missing/scale", "", ""), http.StatusNotFound, object.ReasonNotFound)
}
