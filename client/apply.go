package client

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/homeostat/homeostat/object"
)

// LastAppliedAnnotation keeps the manifest last applied, so that a field
// removed from the manifest is removed from the object on the next apply.
const LastAppliedAnnotation = "homeostat.io/last-applied"

// ApplyResult says what an apply did.
type ApplyResult string

// Apply outcomes, as kubectl prints them.
const (
	Created    ApplyResult = "created"
	Configured ApplyResult = "configured"
	Unchanged  ApplyResult = "unchanged"
)

// Apply creates the object described by manifest (JSON), or brings the
// existing one in line with it: a merge patch from the last applied
// manifest to this one, so fields set by others are kept and fields the
// manifest dropped are removed. Applying the same manifest twice changes
// nothing.
func (c *Client) Apply(ctx context.Context, res Resource, namespace string, manifest []byte) (*object.Object, ApplyResult, error) {
	var desired object.Object
	if err := json.Unmarshal(manifest, &desired); err != nil {
		return nil, "", err
	}
	if res.Namespaced && desired.Metadata.Namespace == "" {
		desired.Metadata.Namespace = namespace
	}
	if !res.Namespaced {
		desired.Metadata.Namespace = ""
	}
	applied, err := withLastApplied(manifest, desired.Metadata.Namespace, res.Namespaced)
	if err != nil {
		return nil, "", err
	}
	cur, err := c.Get(ctx, res, desired.Metadata.Namespace, desired.Metadata.Name)
	if IsNotFound(err) {
		var o object.Object
		if err := json.Unmarshal(applied, &o); err != nil {
			return nil, "", err
		}
		created, err := c.Create(ctx, res, &o)
		return created, Created, err
	}
	if err != nil {
		return nil, "", err
	}
	last := []byte(cur.Metadata.Annotations[LastAppliedAnnotation])
	var patch []byte
	if len(last) == 0 {
		patch = applied
	} else if patch, err = jsonpatch.CreateMergePatch(withoutNamespace(last), withoutNamespace(applied)); err != nil {
		return nil, "", fmt.Errorf("computing the change from the last applied manifest: %w", err)
	}
	curJSON, err := json.Marshal(cur)
	if err != nil {
		return nil, "", err
	}
	next, err := jsonpatch.MergePatch(curJSON, patch)
	if err != nil {
		return nil, "", err
	}
	if jsonpatch.Equal(curJSON, next) {
		return cur, Unchanged, nil
	}
	out, err := c.Patch(ctx, res, cur.Metadata.Namespace, cur.Metadata.Name, patch)
	return out, Configured, err
}

// withLastApplied returns the manifest with its own JSON recorded in the
// last-applied annotation (and the namespace filled in).
func withLastApplied(manifest []byte, namespace string, namespaced bool) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(manifest, &doc); err != nil {
		return nil, err
	}
	md, _ := doc["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		doc["metadata"] = md
	}
	if namespaced {
		md["namespace"] = namespace
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann != nil {
		delete(ann, LastAppliedAnnotation)
	}
	clean, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[LastAppliedAnnotation] = string(clean)
	return json.Marshal(doc)
}

func withoutNamespace(b []byte) []byte {
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return b
	}
	if md, ok := doc["metadata"].(map[string]any); ok {
		delete(md, "namespace")
	}
	out, _ := json.Marshal(doc)
	return out
}
