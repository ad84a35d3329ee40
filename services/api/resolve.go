package api

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// resourceRef is a request resolved to a kind and, where given, a namespace,
// a name and a subresource.
type resourceRef struct {
	res                    *schemas.Resource
	store                  objectStore
	group, version, plural string
	namespace, name, sub   string
}

func (r *resourceRef) groupResource() string {
	if r.group == "" {
		return r.plural
	}
	return r.plural + "." + r.group
}

func (r *resourceRef) kind() string {
	if r.res != nil {
		return r.res.Kind
	}
	return r.plural
}

func (r *resourceRef) key() string { return object.Key(r.namespace, r.name) }

// resolve maps the path to a served resource. A custom kind this process has
// not yet heard of is looked up in the store directly, so that a
// ResourceDefinition is served at once by every replica.
func (s *Service) resolve(r *http.Request) (*resourceRef, *apiError) {
	ref := &resourceRef{
		group: r.PathValue("group"), version: r.PathValue("version"), plural: r.PathValue("resource"),
		namespace: r.PathValue("ns"), name: r.PathValue("name"), sub: r.PathValue("sub"),
	}
	// /api/v1/namespaces/{name}/status parses as the collection "status" in
	// namespace {name}; it is the Namespace's status subresource. So are
	// the others no core kind has as a plural (namespaceSubresources).
	if ref.group == "" && ref.namespace != "" && ref.name == "" && slices.Contains(namespaceSubresources, ref.plural) {
		ref.name, ref.sub, ref.plural, ref.namespace = ref.namespace, ref.plural, "namespaces", ""
	}
	res, ok := s.reg.Lookup(ref.group, ref.version, ref.plural)
	if !ok && ref.group != "" {
		res, ok = s.discoverCustom(r.Context(), ref.group, ref.version, ref.plural)
	}
	if !ok {
		e := newError(http.StatusNotFound, object.ReasonNotFound, "the server could not find the requested resource %s in %s",
			ref.groupResource(), groupVersion(ref.group, ref.version))
		return nil, e
	}
	ref.res = res
	if ref.namespace != "" && !res.Namespaced {
		return nil, newError(http.StatusNotFound, object.ReasonNotFound, "%s is cluster-scoped; drop /namespaces/%s from the path",
			ref.groupResource(), ref.namespace)
	}
	if ref.sub == "log" && (res.Custom || res.Kind != "Pod") {
		return nil, newError(http.StatusNotFound, object.ReasonNotFound, "only pods have logs")
	}
	if ref.sub == "portforward" && (res.Custom || res.Kind != "Pod") {
		return nil, newError(http.StatusNotFound, object.ReasonNotFound, "only pods forward ports")
	}
	if ref.sub == "token" && (res.Custom || res.Kind != "ServiceAccount") {
		return nil, newError(http.StatusNotFound, object.ReasonNotFound, "only serviceaccounts issue tokens")
	}
	if why, ok := unsupportedPodSubresources[ref.sub]; ok && !res.Custom && res.Kind == "Pod" {
		// Not a 404, which kubectl would report as the pod not being found.
		return nil, newError(http.StatusBadRequest, object.ReasonBadRequest, "pods/%s is not supported by Homeostat: %s", ref.sub, why)
	}
	if ref.sub == "scale" && !scalable(res) {
		return nil, newError(http.StatusNotFound, object.ReasonNotFound, "%s has no scale subresource", res.GroupResource())
	}
	if ref.sub != "" && !knownSubresources[ref.sub] {
		return nil, newError(http.StatusNotFound, object.ReasonNotFound, "%s has no subresource %q", ref.groupResource(), ref.sub)
	}
	st, err := s.storeFor(r.Context(), res)
	if err != nil {
		return nil, storeError(ref, ref.name, err)
	}
	ref.store = storeOf(res, st)
	return ref, nil
}

// knownSubresources are the subresources served, of some kinds at least.
var knownSubresources = map[string]bool{"status": true, "scale": true, "log": true, "token": true,
	"reconcile": true, "raw": true, "history": true, "explain": true, "portforward": true}

// unsupportedPodSubresources are Kubernetes' pod subresources Homeostat has
// not built, with why, so that kubectl exec, attach, cp and port-forward
// fail with a reason rather than a missing page.
var unsupportedPodSubresources = map[string]string{
	"exec":                "a pod is a process on its node's host; run commands on the node itself, or read the pod's output with kubectl logs",
	"attach":              "a pod is a process on its node's host, and its output is in its log (kubectl logs -f)",
	"proxy":               "a pod's process listens on its node's own address; reach it there",
	"ephemeralcontainers": "a pod's containers are processes; there is no sandbox to add a container to",
}

func groupVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

func (s *Service) discoverCustom(ctx context.Context, group, version, plural string) (*schemas.Resource, bool) {
	if schemas.Builtin(group, plural) {
		return nil, false
	}
	st, err := s.storeFor(ctx, s.reg.MustLookup("homeostat.io", "resourcedefinitions"))
	if err != nil {
		return nil, false
	}
	def, err := st.Get(ctx, plural+"."+group)
	if err != nil {
		if !errors.Is(err, bus.ErrNotFound) {
			s.log.Warn("looking up a ResourceDefinition", "name", plural+"."+group, "err", err)
		}
		return nil, false
	}
	if def.Metadata.Deleting() {
		return nil, false
	}
	res, err := s.reg.Register(def)
	if err != nil || res.Version != version {
		return nil, false
	}
	return res, true
}

// serve dispatches an object request by method, name and subresource.
func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	if e := s.notReady(); e != nil {
		writeStatus(w, s.log, e)
		return
	}
	if sub := r.PathValue("sub"); !isWatch(r) && sub != "log" && sub != "portforward" {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
	}
	ref, e := s.resolve(r)
	if e != nil {
		writeStatus(w, s.log, e)
		return
	}
	e = s.dispatch(w, r, ref)
	if e != nil {
		writeStatus(w, s.log, e)
	}
}

func (s *Service) dispatch(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	collection := ref.name == ""
	switch {
	case collection && r.Method == http.MethodGet:
		if isWatch(r) {
			return s.watch(w, r, ref)
		}
		return s.list(w, r, ref)
	case issuedOnly(ref) && r.Method != http.MethodGet && r.Method != http.MethodDelete:
		return newError(http.StatusMethodNotAllowed, object.ReasonMethodNotAllowed,
			"tokens are issued by POST /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token (homeostat token create NAME) and revoked by deleting them; %s is not allowed",
			r.Method)
	case collection && r.Method == http.MethodPost:
		if ref.res.Namespaced && ref.namespace == "" {
			return newError(http.StatusMethodNotAllowed, object.ReasonMethodNotAllowed,
				"%s is namespaced; create it under /namespaces/{namespace}/%s", ref.groupResource(), ref.plural)
		}
		return s.create(w, r, ref)
	case collection:
		return methodNotAllowed(r, "GET, POST")
	}
	if ref.res.Namespaced && ref.namespace == "" {
		return newError(http.StatusNotFound, object.ReasonNotFound, "%s is namespaced; address it under /namespaces/{namespace}/%s/%s",
			ref.groupResource(), ref.plural, ref.name)
	}
	if ref.sub == "log" {
		if r.Method != http.MethodGet {
			return methodNotAllowed(r, "GET")
		}
		return s.podLog(w, r, ref)
	}
	if ref.sub == "portforward" {
		if r.Method != http.MethodPost && r.Method != http.MethodGet {
			return methodNotAllowed(r, "POST, GET")
		}
		return s.portForward(w, r, ref)
	}
	if ref.sub == "token" {
		if r.Method != http.MethodPost {
			return methodNotAllowed(r, "POST")
		}
		return s.issueToken(w, r, ref)
	}
	if ref.sub == "scale" {
		return s.scaleSubresource(w, r, ref)
	}
	if read, ok := s.readOnlySubresources()[ref.sub]; ok {
		if r.Method != http.MethodGet {
			return methodNotAllowed(r, "GET")
		}
		return read(w, r, ref)
	}
	switch r.Method {
	case http.MethodGet:
		if isWatch(r) {
			return s.watch(w, r, ref)
		}
		return s.get(w, r, ref)
	case http.MethodPut:
		return s.update(w, r, ref)
	case http.MethodPatch:
		return s.patch(w, r, ref)
	case http.MethodDelete:
		if ref.sub != "" {
			return methodNotAllowed(r, "GET, PUT, PATCH")
		}
		return s.delete(w, r, ref)
	}
	return methodNotAllowed(r, "GET, PUT, PATCH, DELETE")
}

// readOnlySubresources are the subresources that only answer GET.
func (s *Service) readOnlySubresources() map[string]func(http.ResponseWriter, *http.Request, *resourceRef) *apiError {
	return map[string]func(http.ResponseWriter, *http.Request, *resourceRef) *apiError{
		"raw": s.raw, "reconcile": s.reconcileState, "history": s.reconcileHistory, "explain": s.explainObject,
	}
}

// issuedOnly says whether a resource is written only by the API itself:
// Tokens, which only the serviceaccounts/token subresource makes.
func issuedOnly(ref *resourceRef) bool {
	return !ref.res.Custom && ref.res.Group == "homeostat.io" && ref.res.Plural == "tokens"
}

func methodNotAllowed(r *http.Request, allowed string) *apiError {
	return newError(http.StatusMethodNotAllowed, object.ReasonMethodNotAllowed, "%s is not allowed on %s; allowed: %s",
		r.Method, r.URL.Path, allowed)
}

func isWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "1" || v == "true"
}

func dryRun(r *http.Request) (bool, *apiError) {
	switch v := r.URL.Query().Get("dryRun"); v {
	case "":
		return false, nil
	case "All":
		return true, nil
	default:
		return false, badRequest("dryRun=%q is not supported; use dryRun=All", v)
	}
}
