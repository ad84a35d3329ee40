package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// normalize fills apiVersion, kind and namespace from the path where the body
// leaves them out, and refuses a body that names a different kind, namespace
// or (for item paths) name than the path does.
func normalize(ref *resourceRef, doc map[string]any) *apiError {
	res := ref.res
	if v, ok := doc["apiVersion"]; !ok || v == "" {
		doc["apiVersion"] = res.APIVersion()
	} else if v != res.APIVersion() {
		return badRequest("apiVersion %q in the body does not match %s served here", v, res.APIVersion())
	}
	if v, ok := doc["kind"]; !ok || v == "" {
		doc["kind"] = res.Kind
	} else if v != res.Kind {
		return badRequest("kind %q in the body does not match %s served here", v, res.Kind)
	}
	md, ok := doc["metadata"].(map[string]any)
	if !ok {
		if doc["metadata"] != nil {
			return invalidField(ref, "", "metadata", "type", "metadata must be an object")
		}
		md = map[string]any{}
		doc["metadata"] = md
	}
	ns, _ := md["namespace"].(string)
	switch {
	case !res.Namespaced && ns != "":
		return badRequest("%s is cluster-scoped; metadata.namespace must be empty, not %q", ref.groupResource(), ns)
	case res.Namespaced && ns == "":
		if ref.namespace == "" {
			return badRequest("metadata.namespace is required for %s", ref.groupResource())
		}
		md["namespace"] = ref.namespace
	case res.Namespaced && ref.namespace != "" && ns != ref.namespace:
		return badRequest("metadata.namespace %q does not match the namespace %q in the path", ns, ref.namespace)
	}
	name, _ := md["name"].(string)
	if ref.name != "" {
		if name == "" {
			md["name"] = ref.name
		} else if name != ref.name {
			return badRequest("metadata.name %q does not match the name %q in the path", name, ref.name)
		}
	}
	return nil
}

// check defaults and validates an object, returning it as stored.
func (s *Service) check(ref *resourceRef, o *object.Object) (*object.Object, *apiError) {
	fields := o.Metadata.ManagedFields
	known := s.checked.known(ref.res, fields)
	if known {
		without := *o
		without.Metadata.ManagedFields = nil
		o = &without
	}
	doc, e := toDoc(o)
	if e != nil {
		return nil, e
	}
	ref.res.Default(doc)
	// A name still to be generated is checked as the store will make it:
	// generateName and five characters more.
	md, _ := doc["metadata"].(map[string]any)
	gen, _ := md["generateName"].(string)
	generate := gen != "" && md["name"] == ""
	if generate {
		md["name"] = gen + "bbbbb"
	}
	err := ref.res.Validate(doc)
	if generate {
		md["name"] = ""
	}
	if err != nil {
		var inv *schemas.Invalid
		if errors.As(err, &inv) {
			return nil, invalid(ref, inv)
		}
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "validation: %v", err)
	}
	n, e := toObject(doc)
	switch {
	case e != nil:
		return nil, e
	case known:
		n.Metadata.ManagedFields = fields
	case bytes.Equal(n.Metadata.ManagedFields, fields):
		// Remembered only as the check writes them back, so that a
		// remembered object stores what a checked one would.
		s.checked.add(ref.res, fields)
	}
	return n, nil
}

// namespaceOpen refuses objects in a namespace that is missing or
// terminating. As the Kubernetes API server's namespace lifecycle check
// does, it takes the API's cache of namespaces at its word when that shows
// the namespace open, and reads the store when it does not (a namespace
// made a moment ago): a read for every create was a fourteenth of the
// API's work under a stream of them.
func (s *Service) namespaceOpen(ctx context.Context, ref *resourceRef, ns string) *apiError {
	if !ref.res.Namespaced {
		return nil
	}
	res := s.reg.MustLookup("", "namespaces")
	st, err := s.storeFor(ctx, res)
	if err != nil {
		return storeError(ref, ns, err)
	}
	if n, ok := s.lists.cached(res, st, ns); ok && !n.Metadata.Deleting() {
		return nil
	}
	n, err := st.Get(ctx, ns)
	if errors.Is(err, bus.ErrNotFound) {
		e := newError(http.StatusNotFound, object.ReasonNotFound, "namespaces %q not found", ns)
		e.details = &object.StatusDetails{Name: ns, Kind: "namespaces"}
		return e
	}
	if err != nil {
		return storeError(ref, ns, err)
	}
	if n.Metadata.Deleting() {
		return newError(http.StatusForbidden, object.ReasonForbidden,
			"%s cannot be created in namespace %q because it is being terminated", ref.groupResource(), ns)
	}
	return nil
}
