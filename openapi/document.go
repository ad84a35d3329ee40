// Package openapi derives what Kubernetes clients read about the API's
// kinds from their JSON Schemas in package schemas: the OpenAPI v2 document
// (/openapi/v2, JSON or protobuf), one OpenAPI v3 document per group and
// version (/openapi/v3/...) with the index that points to them, and the
// patch metadata strategic merge patch needs. One source serves kubectl's
// validation, explain and apply and the API's own patching, so they cannot
// disagree.
//
// Every named $def becomes a named schema; allOf is flattened; a list keeps
// its x-kubernetes-* markers (list type, map keys, patch strategy) on the
// property itself, as Kubernetes publishes them.
package openapi

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/homeostat/homeostat/schemas"
)

// Resources is the part of the schema registry the documents are made from.
type Resources interface {
	Resources() []*schemas.Resource
	Generation() uint64
}

// Documents are the OpenAPI forms of one generation of the registry.
type Documents struct {
	// V2 is the swagger 2.0 document as JSON.
	V2 []byte
	// V3 holds a document per group version, keyed "api/v1" or "apis/G/V".
	V3 map[string][]byte
	// V3Hash is each V3 document's hash, which its URL carries for caching.
	V3Hash map[string]string

	schemas  map[string]*spec.Schema
	v2pb     sync.Once
	v2pbData []byte
	v2pbErr  error
	kinds    map[string]string // apiVersion/kind → schema name
	// props holds, for each schema that pruning walked, its properties'
	// schemas by name (a *spec.Schema → map[string]*spec.Schema), made
	// once: a property read from the map is a copy, and taking its
	// address put the copy on the heap for every object pruned.
	props sync.Map
}

// Cache makes the documents once per generation of the registry.
type Cache struct {
	src  Resources
	mu   sync.Mutex
	gen  uint64
	docs *Documents
}

// NewCache derives documents from src on demand.
func NewCache(src Resources) *Cache { return &Cache{src: src} }

// Get returns the documents of the registry as it is now.
func (c *Cache) Get() (*Documents, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gen := c.src.Generation()
	if c.docs != nil && c.gen == gen {
		return c.docs, nil
	}
	d, err := Build(c.src.Resources())
	if err != nil {
		return nil, err
	}
	c.docs, c.gen = d, gen
	return d, nil
}

// Build derives the documents of the given resources.
func Build(resources []*schemas.Resource) (*Documents, error) {
	c := newConverter()
	kinds := map[string]string{}
	for _, res := range resources {
		name, err := c.kind(res)
		if err != nil {
			return nil, err
		}
		kinds[kindKey(res)] = name
	}
	d := &Documents{V3: map[string][]byte{}, V3Hash: map[string]string{}, kinds: kinds, schemas: map[string]*spec.Schema{}}
	for name, s := range c.defs {
		var sch spec.Schema
		if err := remarshal(s, &sch); err != nil {
			return nil, fmt.Errorf("openapi: schema %s: %w", name, err)
		}
		d.schemas[name] = &sch
	}
	byGV := map[string][]*schemas.Resource{}
	for _, res := range resources {
		byGV[gvPath(res)] = append(byGV[gvPath(res)], res)
	}
	for gv, rs := range byGV {
		doc, err := json.Marshal(v3Document(rs, kinds, c.defs))
		if err != nil {
			return nil, err
		}
		sum := sha512.Sum512(doc)
		d.V3[gv], d.V3Hash[gv] = doc, strings.ToUpper(hex.EncodeToString(sum[:]))
	}
	v2, err := json.Marshal(v2Document(resources, kinds, c.defs))
	if err != nil {
		return nil, err
	}
	d.V2 = v2
	return d, nil
}

// gvPath is where a group version's v3 document is served under /openapi/v3/.
func gvPath(res *schemas.Resource) string {
	if res.Group == "" {
		return "api/" + res.Version
	}
	return "apis/" + res.Group + "/" + res.Version
}

// V3Index is the /openapi/v3 document: where each group version's is.
func (d *Documents) V3Index() ([]byte, error) {
	paths := map[string]any{}
	for gv, h := range d.V3Hash {
		paths[gv] = map[string]any{"serverRelativeURL": "/openapi/v3/" + gv + "?hash=" + h}
	}
	return json.Marshal(map[string]any{"paths": paths})
}

// Schema returns a kind's schema and every named schema it may refer to.
func (d *Documents) Schema(res *schemas.Resource) (*spec.Schema, map[string]*spec.Schema, bool) {
	name, ok := d.kinds[kindKey(res)]
	if !ok {
		return nil, nil, false
	}
	return d.schemas[name], d.schemas, true
}

func kindKey(res *schemas.Resource) string { return res.APIVersion() + "/" + res.Kind }

func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// V2Protobuf is the v2 document in the protobuf form kubectl asks for
// first (application/com.github.proto-openapi.spec.v2@v1.0+protobuf).
func (d *Documents) V2Protobuf() ([]byte, error) {
	d.v2pb.Do(func() {
		doc, err := openapiv2.ParseDocument(d.V2)
		if err != nil {
			d.v2pbErr = fmt.Errorf("openapi: the v2 document does not parse: %w", err)
			return
		}
		d.v2pbData, d.v2pbErr = proto.Marshal(doc)
	})
	return d.v2pbData, d.v2pbErr
}

// Schemas are every named schema, for what walks the kinds' types
// (structured-merge-diff's type converter); read them, never change them.
func (d *Documents) Schemas() map[string]*spec.Schema { return d.schemas }
