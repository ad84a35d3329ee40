// Package schemas holds the JSON Schemas of Homeostat's kinds: the built-in
// ones, embedded, and custom ones registered at run time from
// ResourceDefinitions. It resolves a request path or an apiVersion and kind
// to a Resource, validates objects against it (every failing field with its
// path and the rule it breaks), and applies schema defaults.
package schemas

import (
	"bytes"
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

const schemaBase = "https://homeostat.io/schemas/"

// EventTTL is how long an Event lives after its last write by default, so
// that events never pile up: as long as the reconcile history, which they
// are read beside. The API may be told otherwise (bus.Conn.Retain).
const EventTTL = 7 * 24 * time.Hour

// Resource is one kind the API serves.
type Resource struct {
	Group      string
	Version    string
	Kind       string
	Plural     string
	Singular   string
	ShortNames []string
	Namespaced bool
	// Custom marks kinds defined by a ResourceDefinition.
	Custom bool
	// TTL, when set, expires objects this long after their last write (Events).
	TTL time.Duration
	// StoredAs is the resource whose objects this one serves in another
	// shape (events.k8s.io/v1 Events are core/v1 Events); nil for most.
	StoredAs *Resource
	// Categories and PrinterColumns of a custom kind, from its definition.
	Categories     []string
	PrinterColumns []PrinterColumn

	schema *jsonschema.Schema
	docs   map[string]any // schema documents by URL, for defaulting through $ref
	root   string         // URL of the kind's schema
	check  func(doc map[string]any) []Cause
}

// APIVersion is group/version, or version for the core group.
func (r *Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// Source returns the URL of the kind's schema and every schema document
// it may refer to, by URL, for whatever derives another form from it (the
// OpenAPI documents). The documents are shared: read them, never change them.
func (r *Resource) Source() (root string, docs map[string]any) { return r.root, r.docs }

// GroupResource is plural.group, the name Kubernetes gives a resource.
func (r *Resource) GroupResource() string {
	if r.Group == "" {
		return r.Plural
	}
	return r.Plural + "." + r.Group
}

type builtin struct {
	group, version, kind, plural, file string
	short                              []string
	namespaced                         bool
}

var builtins = []builtin{
	{"", "v1", "Namespace", "namespaces", "namespace.yaml", []string{"ns"}, false},
	{"", "v1", "Node", "nodes", "node.yaml", []string{"no"}, false},
	{"", "v1", "Pod", "pods", "pod.yaml", []string{"po"}, true},
	{"", "v1", "Event", "events", "event.yaml", []string{"ev"}, true},
	{"", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount.yaml", []string{"sa"}, true},
	{"", "v1", "Service", "services", "service.yaml", []string{"svc"}, true},
	{"", "v1", "ConfigMap", "configmaps", "configmap.yaml", []string{"cm"}, true},
	{"", "v1", "Secret", "secrets", "secret.yaml", nil, true},
	{"apps", "v1", "ReplicaSet", "replicasets", "replicaset.yaml", []string{"rs"}, true},
	{"apps", "v1", "Deployment", "deployments", "deployment.yaml", []string{"deploy"}, true},
	{"apps", "v1", "DaemonSet", "daemonsets", "daemonset.yaml", []string{"ds"}, true},
	{"batch", "v1", "Job", "jobs", "job.yaml", nil, true},
	{"coordination.k8s.io", "v1", "Lease", "leases", "lease.yaml", nil, true},
	{"discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice.yaml", nil, true},
	{"events.k8s.io", "v1", "Event", "events", "eventv1.yaml", []string{"ev"}, true},
	{"homeostat.io", "v1", "ResourceDefinition", "resourcedefinitions", "resourcedefinition.yaml", []string{"rd", "rds"}, false},
	{"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", "customresourcedefinition.yaml", []string{"crd", "crds"}, false},
	{"homeostat.io", "v1", "Token", "tokens", "token.yaml", nil, true},
	{"rbac.authorization.k8s.io", "v1", "Role", "roles", "role.yaml", nil, true},
	{"rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole.yaml", nil, false},
	{"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding.yaml", nil, true},
	{"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding.yaml", nil, false},
}

// Registry maps paths and kinds to Resources. It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	byPath map[string]*Resource // group/version/plural
	byKind map[string]*Resource // apiVersion/kind
	gen    uint64               // counts changes, for caches of derived forms
}

// builtinDocs loads the embedded schema documents once, keyed by URL.
var builtinDocs = sync.OnceValues(func() (map[string]any, error) {
	docs := map[string]any{}
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		raw, err := builtinFS.ReadFile(path.Join("builtin", e.Name()))
		if err != nil {
			return nil, err
		}
		doc, err := yamlDoc(raw)
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", e.Name(), err)
		}
		docs[schemaBase+e.Name()] = doc
	}
	return docs, nil
})

// New returns a registry of the built-in kinds.
func New() (*Registry, error) {
	docs, err := builtinDocs()
	if err != nil {
		return nil, err
	}
	r := &Registry{byPath: map[string]*Resource{}, byKind: map[string]*Resource{}}
	c := newCompiler(docs)
	for _, b := range builtins {
		url := schemaBase + b.file
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("schemas: compile %s: %w", b.file, err)
		}
		res := &Resource{
			Group: b.group, Version: b.version, Kind: b.kind, Plural: b.plural,
			Singular: strings.ToLower(b.kind), ShortNames: b.short, Namespaced: b.namespaced,
			schema: sch, docs: docs, root: url, check: semanticChecks[b.kind],
		}
		if b.kind == "Event" {
			res.TTL = EventTTL
		}
		r.add(res)
	}
	events, _ := r.Lookup("", "v1", "events")
	if v1, ok := r.Lookup("events.k8s.io", "v1", "events"); ok {
		v1.StoredAs = events
	}
	return r, nil
}

// newCompiler returns a compiler that knows the given documents and loads
// nothing from outside. It asserts format int32 and int64 (see intformat.go).
func newCompiler(docs map[string]any) *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.RegisterVocabulary(intFormatVocab())
	c.AssertVocabs()
	for url, doc := range docs {
		if err := c.AddResource(url, doc); err != nil {
			panic("schemas: document " + url + ": " + err.Error())
		}
	}
	return c
}

func yamlDoc(raw []byte) (any, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(j))
}

func pathKey(group, version, plural string) string { return group + "/" + version + "/" + plural }

func (r *Registry) add(res *Resource) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byPath[pathKey(res.Group, res.Version, res.Plural)] = res
	r.byKind[res.APIVersion()+"/"+res.Kind] = res
	r.gen++
}

// Generation counts the registry's changes: a form derived from its
// resources stays true while the generation stays the same.
func (r *Registry) Generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// Lookup finds the resource served at /apis/group/version/plural (group
// empty for /api/version).
func (r *Registry) Lookup(group, version, plural string) (*Resource, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	res, ok := r.byPath[pathKey(group, version, plural)]
	return res, ok
}

// ForKind finds the resource of an apiVersion and kind.
func (r *Registry) ForKind(apiVersion, kind string) (*Resource, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	res, ok := r.byKind[apiVersion+"/"+kind]
	return res, ok
}

// Resources lists every served resource, sorted by group then plural.
func (r *Registry) Resources() []*Resource {
	r.mu.RLock()
	out := make([]*Resource, 0, len(r.byPath))
	for _, res := range r.byPath {
		out = append(out, res)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Plural < out[j].Plural
	})
	return out
}

// Builtin reports whether group/plural names a built-in resource, which a
// ResourceDefinition may not shadow.
func Builtin(group, plural string) bool {
	for _, b := range builtins {
		if b.group == group && b.plural == plural {
			return true
		}
	}
	return false
}

// MustLookup is Lookup for built-in kinds, which always exist.
func (r *Registry) MustLookup(group, plural string) *Resource {
	for _, b := range builtins {
		if b.group == group && b.plural == plural {
			res, ok := r.Lookup(group, b.version, plural)
			if ok {
				return res
			}
		}
	}
	panic("schemas: no built-in resource " + plural + "." + group)
}
