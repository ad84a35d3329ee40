package schemas

import (
	"fmt"
	"path"
	"strings"
)

// envChecks: each variable has a value or one source of it.
func envChecks(c map[string]any, at string) []Cause {
	var out []Cause
	env, _ := c["env"].([]any)
	for i, e := range env {
		em, _ := e.(map[string]any)
		field := fmt.Sprintf("%s.env[%d]", at, i)
		src, hasSrc := em["valueFrom"].(map[string]any)
		if _, hasValue := em["value"]; hasValue && hasSrc {
			out = append(out, Cause{Field: field + ".valueFrom", Rule: "exclusive", Message: "a variable has a value or a valueFrom, not both"})
		}
		if hasSrc && len(src) != 1 {
			out = append(out, Cause{Field: field + ".valueFrom", Rule: "oneOf",
				Message: fmt.Sprintf("valueFrom needs exactly one of configMapKeyRef, secretKeyRef or fieldRef (has %d)", len(src))})
		}
	}
	from, _ := c["envFrom"].([]any)
	for i, f := range from {
		fm, _ := f.(map[string]any)
		_, cm := fm["configMapRef"]
		_, sec := fm["secretRef"]
		if cm == sec {
			out = append(out, Cause{Field: fmt.Sprintf("%s.envFrom[%d]", at, i), Rule: "oneOf",
				Message: "envFrom needs exactly one of configMapRef or secretRef"})
		}
	}
	return out
}

// volumeChecks: volumes named once with one source each, and every mount
// of a volume the pod has, at a path inside the container's root.
func volumeChecks(spec map[string]any, at string) []Cause {
	var out []Cause
	vols := map[string]bool{}
	list, _ := spec["volumes"].([]any)
	for i, v := range list {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		field := fmt.Sprintf("%s.volumes[%d]", at, i)
		if vols[name] {
			out = append(out, Cause{Field: field + ".name", Rule: "unique", Message: fmt.Sprintf("volume name %q is used twice", name)})
		}
		vols[name] = true
		if n := len(vm) - 1; n != 1 {
			out = append(out, Cause{Field: field, Rule: "oneOf",
				Message: fmt.Sprintf("a volume needs exactly one of configMap, secret or emptyDir (has %d)", n)})
		}
		for _, src := range []string{"configMap", "secret"} {
			items, _ := get(vm, src, "items").([]any)
			for j, it := range items {
				p, _ := get(it.(map[string]any), "path").(string)
				if bad := escapes(p); bad != "" {
					out = append(out, Cause{Field: fmt.Sprintf("%s.%s.items[%d].path", field, src, j), Rule: "path", Message: bad})
				}
			}
		}
	}
	for _, kind := range []string{"initContainers", "containers"} {
		cs, _ := spec[kind].([]any)
		for i, c := range cs {
			out = append(out, mountChecks(c.(map[string]any), vols, fmt.Sprintf("%s.%s[%d]", at, kind, i))...)
		}
	}
	return out
}

func mountChecks(c map[string]any, vols map[string]bool, at string) []Cause {
	var out []Cause
	paths := map[string]bool{}
	mounts, _ := c["volumeMounts"].([]any)
	for i, m := range mounts {
		mm, _ := m.(map[string]any)
		field := fmt.Sprintf("%s.volumeMounts[%d]", at, i)
		name, _ := mm["name"].(string)
		if !vols[name] {
			out = append(out, Cause{Field: field + ".name", Rule: "exists", Message: fmt.Sprintf("the pod has no volume %q", name)})
		}
		mp, _ := mm["mountPath"].(string)
		clean := path.Clean("/" + mp)
		switch {
		case strings.Contains(mp, ".."):
			out = append(out, Cause{Field: field + ".mountPath", Rule: "path", Message: "must not contain '..'"})
		case clean == "/":
			out = append(out, Cause{Field: field + ".mountPath", Rule: "path", Message: "must name a directory below the root, not the root itself"})
		case paths[clean]:
			out = append(out, Cause{Field: field + ".mountPath", Rule: "unique", Message: fmt.Sprintf("%s is mounted twice", clean)})
		}
		paths[clean] = true
		if sp, _ := mm["subPath"].(string); sp != "" {
			if bad := escapes(sp); bad != "" {
				out = append(out, Cause{Field: field + ".subPath", Rule: "path", Message: bad})
			}
		}
	}
	return out
}

// escapes says why a path inside a volume is not one, or "".
func escapes(p string) string {
	if strings.HasPrefix(p, "/") {
		return "must be a relative path"
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "must not contain '..'"
		}
	}
	return ""
}
