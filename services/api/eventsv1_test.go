package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/object"
)

func field(t *testing.T, o object.Object, name string) string {
	t.Helper()
	return string(o.Fields[name])
}

// An Event is one object served in two shapes: written as core/v1 it reads
// as events.k8s.io/v1 and the other way round, through get, list with
// field selectors, watch, patch and delete.
func TestEventsInBothShapes(t *testing.T) {
	base := startAPI(t, conn(t))
	core := base + "/api/v1/namespaces/default/events"
	v1 := base + "/apis/events.k8s.io/v1/namespaces/default/events"
	w := openWatch(t, v1+"?watch=true")
	mustCode(t, call(t, "POST", core, "application/json", `{"metadata":{"name":"old"},"involvedObject":{"kind":"Pod","name":"web-1"},
		"reason":"Started","message":"started the container","count":3,"reportingComponent":"agent","source":{"component":"agent"}}`), http.StatusCreated, "")
	if o := w.next("ADDED", "old"); o.APIVersion != "events.k8s.io/v1" || !strings.Contains(field(t, o, "regarding"), `"web-1"`) {
		t.Fatalf("watched: %+v", o)
	}
	r := call(t, "GET", v1+"/old", "", "")
	mustCode(t, r, http.StatusOK, "")
	o := r.obj
	if o.APIVersion != "events.k8s.io/v1" || field(t, o, "note") != `"started the container"` || field(t, o, "deprecatedCount") != "3" ||
		field(t, o, "reportingController") != `"agent"` || field(t, o, "involvedObject") != "" {
		t.Fatalf("core event read as events.k8s.io/v1: %s", r.body)
	}
	mustCode(t, call(t, "POST", v1, "application/json", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"new"},
		"eventTime":"2026-11-25T05:00:00.000000Z","regarding":{"kind":"Deployment","name":"web"},"reason":"Scaled","action":"Scale",
		"note":"scaled to 3","reportingController":"example.com/operator","reportingInstance":"op-1","type":"Normal"}`), http.StatusCreated, "")
	r = call(t, "GET", core+"/new", "", "")
	if o := r.obj; o.APIVersion != "v1" || field(t, o, "message") != `"scaled to 3"` || !strings.Contains(field(t, o, "involvedObject"), `"web"`) ||
		field(t, o, "reportingComponent") != `"example.com/operator"` || field(t, o, "action") != `"Scale"` {
		t.Fatalf("events.k8s.io/v1 event read as core: %s", r.body)
	}
	r = call(t, "GET", v1+"?fieldSelector=regarding.name%3Dweb", "", "")
	var list struct{ Items []object.Object }
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Items) != 1 || list.Items[0].Metadata.Name != "new" ||
		list.Items[0].APIVersion != "events.k8s.io/v1" || field(t, list.Items[0], "note") != `"scaled to 3"` {
		t.Fatalf("field selector regarding.name: %v %s", err, r.body)
	}
	// A list without a selector comes in the same shape.
	r = call(t, "GET", v1, "", "")
	list.Items = nil
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("list: %v %s", err, r.body)
	}
	for _, it := range list.Items {
		if it.APIVersion != "events.k8s.io/v1" || field(t, it, "note") == "" || field(t, it, "message") != "" {
			t.Fatalf("listed as events.k8s.io/v1: %s", r.body)
		}
	}
	mustCode(t, call(t, "GET", v1+"?fieldSelector=involvedObject.name%3Dweb", "", ""), http.StatusBadRequest, "BadRequest")
	mustCode(t, call(t, "PATCH", v1+"/new", "application/merge-patch+json",
		`{"series":{"count":2,"lastObservedTime":"2026-11-25T05:01:00.000000Z"}}`), http.StatusOK, "")
	if r := call(t, "GET", core+"/new", "", ""); !strings.Contains(field(t, r.obj, "series"), `"count":2`) {
		t.Fatalf("after a patch of the series: %s", r.body)
	}
	r = call(t, "POST", v1, "application/json", `{"metadata":{"name":"bad"},"reason":"X","note":"no subject"}`)
	mustCode(t, r, http.StatusUnprocessableEntity, "Invalid")
	if !strings.Contains(r.status.Message, "regarding") {
		t.Fatalf("an event without regarding: %s", r.status.Message)
	}
	mustCode(t, call(t, "DELETE", v1+"/old", "", ""), http.StatusOK, "")
	mustCode(t, call(t, "GET", core+"/old", "", ""), http.StatusNotFound, "NotFound")
}
