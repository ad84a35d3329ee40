package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/testenv/poll"
)

const widgetDef = `
apiVersion: homeostat.io/v1
kind: ResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  version: v1
  kind: Widget
  plural: widgets
  shortNames: [wd]
  schema:
    type: object
    properties:
      spec:
        type: object
        required: [size]
        properties:
          size: {type: integer, minimum: 1}
          color: {type: string, default: blue}
        additionalProperties: false
`

func TestCustomKindAcrossReplicas(t *testing.T) {
	c := conn(t)
	a, b := startAPI(t, c), startAPI(t, c)
	widgets := "/apis/example.com/v1/namespaces/default/widgets"

	mustCode(t, call(t, "GET", b+widgets, "", ""), http.StatusNotFound, object.ReasonNotFound)
	mustCode(t, call(t, "POST", a+"/apis/homeostat.io/v1/resourcedefinitions", "application/yaml", widgetDef), http.StatusCreated, "")

	// The other replica serves the kind at once, validated and defaulted by its schema.
	r := call(t, "POST", b+widgets, "", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":2}}`)
	mustCode(t, r, http.StatusCreated, "")
	if string(r.obj.Spec) != `{"color":"blue","size":2}` {
		t.Fatalf("widget spec %s, want the default color", r.obj.Spec)
	}
	// A field the schema does not declare is pruned with a warning, as
	// Kubernetes prunes a custom resource, or refused when asked.
	bad := call(t, "POST", a+widgets, "", `{"metadata":{"name":"w2"},"spec":{"size":0,"shape":"round"}}`)
	mustCode(t, bad, http.StatusUnprocessableEntity, object.ReasonInvalid)
	if len(bad.status.Details.Causes) != 1 || bad.status.Details.Causes[0].Field != "spec.size" ||
		!strings.Contains(bad.header.Get("Warning"), `unknown field \"spec.shape\"`) {
		t.Fatalf("causes: %+v, warning %q", bad.status.Details.Causes, bad.header.Values("Warning"))
	}
	strict := call(t, "POST", a+widgets+"?fieldValidation=Strict", "", `{"metadata":{"name":"w2"},"spec":{"size":1,"shape":"round"}}`)
	mustCode(t, strict, http.StatusBadRequest, object.ReasonBadRequest)
	if c := strict.status.Details.Causes; len(c) != 1 || c[0].Field != "spec.shape" {
		t.Fatalf("strict causes: %+v", c)
	}
	mustCode(t, call(t, "GET", a+widgets+"/w1", "", ""), http.StatusOK, "")
	mustCode(t, call(t, "GET", a+"/apis/example.com/v1/widgets", "", ""), http.StatusOK, "")

	// An invalid definition is refused with the field named.
	r = call(t, "POST", a+"/apis/homeostat.io/v1/resourcedefinitions", "", `{"metadata":{"name":"x.example.com"},"spec":{"group":"example.com","version":"v1","kind":"X","plural":"xs","schema":{"type":7}}}`)
	mustCode(t, r, http.StatusUnprocessableEntity, object.ReasonInvalid)
	// Built-in kinds cannot be shadowed.
	r = call(t, "POST", a+"/apis/homeostat.io/v1/resourcedefinitions", "", `{"metadata":{"name":"pods.homeostat.io"},"spec":{"group":"homeostat.io","version":"v1","kind":"Pod","plural":"pods","schema":{}}}`)
	mustCode(t, r, http.StatusUnprocessableEntity, object.ReasonInvalid)

	// Deleting the definition stops serving the kind everywhere, objects and all.
	mustCode(t, call(t, "DELETE", b+"/apis/homeostat.io/v1/resourcedefinitions/widgets.example.com", "", ""), http.StatusOK, "")
	mustCode(t, call(t, "GET", b+widgets+"/w1", "", ""), http.StatusNotFound, object.ReasonNotFound)
	poll.Until(t, "replica a to stop serving widgets", 15*time.Second, func() bool {
		resp, err := admin(t).Get(a + widgets)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusNotFound
	})
	// Defining it again starts from an empty kind.
	mustCode(t, call(t, "POST", a+"/apis/homeostat.io/v1/resourcedefinitions", "application/yaml", widgetDef), http.StatusCreated, "")
	mustCode(t, call(t, "GET", b+widgets+"/w1", "", ""), http.StatusNotFound, object.ReasonNotFound)
}

// A kind whose schema is a reference to itself: a create of one of its
// objects is answered (refused, the validation naming the cycle), where
// pruning followed the reference for good and held the request.
func TestCustomKindThatRefersToItself(t *testing.T) {
	a := startAPI(t, conn(t))
	mustCode(t, call(t, "POST", a+"/apis/homeostat.io/v1/resourcedefinitions", "", `{"metadata":{"name":"loops.example.com"},
		"spec":{"group":"example.com","version":"v1","kind":"Loop","plural":"loops",
		"schema":{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}},"properties":{"spec":{"$ref":"#/$defs/a"}}}}}`), http.StatusCreated, "")
	done := make(chan response, 1)
	go func() {
		done <- call(t, "POST", a+"/apis/example.com/v1/namespaces/default/loops", "", `{"metadata":{"name":"l"},"spec":{"x":{"y":1}}}`)
	}()
	r := poll.Receive(t, "the answer to a create of a kind that refers to itself", 30*time.Second, done)
	mustCode(t, r, http.StatusUnprocessableEntity, object.ReasonInvalid)
	t.Logf("refused: %s", r.status.Message)
}
