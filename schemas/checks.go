package schemas

import (
	"fmt"
	"strings"

	"github.com/homeostat/homeostat/object"
)

// semanticChecks are the rules a JSON Schema cannot say, per built-in kind.
// They run only when the schema passes, so the shapes are known.
var semanticChecks = map[string]func(map[string]any) []Cause{
	"Pod":                      podChecks,
	"ReplicaSet":               selectorChecks,
	"Deployment":               selectorChecks,
	"DaemonSet":                selectorChecks,
	"Job":                      jobChecks,
	"ResourceDefinition":       definitionChecks,
	"CustomResourceDefinition": crdChecks,
	"Role":                     roleChecks,
	"ClusterRole":              roleChecks,
	"ConfigMap":                configMapChecks,
	"Secret":                   secretChecks,
	"Service":                  serviceChecks,
}

// roleChecks: a rule names resources (with their groups) or paths, not
// both; only a ClusterRole's rules name paths, and only a ClusterRole
// aggregates.
func roleChecks(doc map[string]any) []Cause {
	var out []Cause
	rules, _ := doc["rules"].([]any)
	cluster := doc["kind"] == "ClusterRole"
	for i, r := range rules {
		rule, _ := r.(map[string]any)
		at := fmt.Sprintf("rules[%d]", i)
		_, groups := rule["apiGroups"]
		_, resources := rule["resources"]
		_, urls := rule["nonResourceURLs"]
		switch {
		case urls && !cluster:
			out = append(out, Cause{Field: at + ".nonResourceURLs", Rule: "namespaced",
				Message: "a Role applies within a namespace and cannot name non-resource URLs; use a ClusterRole"})
		case urls && (groups || resources):
			out = append(out, Cause{Field: at, Rule: "exclusive", Message: "a rule applies to resources or to non-resource URLs, not both"})
		case !urls && !groups:
			out = append(out, Cause{Field: at + ".apiGroups", Rule: "required", Message: "apiGroups is required (\"\" is the core group)"})
		case !urls && !resources:
			out = append(out, Cause{Field: at + ".resources", Rule: "required", Message: "resources is required"})
		}
	}
	return out
}

func get(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func podChecks(doc map[string]any) []Cause {
	spec, _ := doc["spec"].(map[string]any)
	return podSpecChecks(spec, "spec")
}

func podSpecChecks(spec map[string]any, at string) []Cause {
	var out []Cause
	seen := map[string]bool{}
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for i, c := range cs {
			cm, _ := c.(map[string]any)
			name, _ := cm["name"].(string)
			field := fmt.Sprintf("%s.%s[%d].name", at, list, i)
			if seen[name] {
				out = append(out, Cause{Field: field, Rule: "unique", Message: fmt.Sprintf("container name %q is used twice", name)})
			}
			seen[name] = true
			out = append(out, probeChecks(cm, fmt.Sprintf("%s.%s[%d]", at, list, i))...)
			out = append(out, envChecks(cm, fmt.Sprintf("%s.%s[%d]", at, list, i))...)
		}
	}
	out = append(out, portChecks(spec, at)...)
	return append(out, volumeChecks(spec, at)...)
}

func probeChecks(c map[string]any, at string) []Cause {
	var out []Cause
	for _, p := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		pm, ok := c[p].(map[string]any)
		if !ok {
			continue
		}
		n := 0
		for _, h := range []string{"exec", "httpGet", "tcpSocket"} {
			if _, ok := pm[h]; ok {
				n++
			}
		}
		if n != 1 {
			out = append(out, Cause{Field: at + "." + p, Rule: "oneOf",
				Message: fmt.Sprintf("a probe needs exactly one of exec, httpGet or tcpSocket (has %d)", n)})
		}
	}
	return out
}

func labelsOf(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := map[string]string{}
	for k, x := range m {
		out[k], _ = x.(string)
	}
	return out
}

func selectorOf(v any) (*object.LabelSelector, error) {
	m, _ := v.(map[string]any)
	ls := &object.LabelSelector{MatchLabels: labelsOf(m["matchLabels"])}
	exprs, _ := m["matchExpressions"].([]any)
	for _, e := range exprs {
		em, _ := e.(map[string]any)
		r := object.LabelSelectorRequirement{}
		r.Key, _ = em["key"].(string)
		r.Operator, _ = em["operator"].(string)
		vals, _ := em["values"].([]any)
		for _, v := range vals {
			s, _ := v.(string)
			r.Values = append(r.Values, s)
		}
		ls.MatchExpressions = append(ls.MatchExpressions, r)
	}
	return ls, nil
}

// selectorChecks: the selector must be non-empty and select the template,
// or the controller would create pods it cannot see.
func selectorChecks(doc map[string]any) []Cause {
	var out []Cause
	spec, _ := doc["spec"].(map[string]any)
	if tspec, ok := get(spec, "template", "spec").(map[string]any); ok {
		out = append(out, podSpecChecks(tspec, "spec.template.spec")...)
	}
	ls, _ := selectorOf(spec["selector"])
	if len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
		return append(out, Cause{Field: "spec.selector", Rule: "nonEmpty", Message: "the selector must not be empty"})
	}
	sel, err := ls.Selector()
	if err != nil {
		return append(out, Cause{Field: "spec.selector", Rule: "selector", Message: err.Error()})
	}
	if !sel.Matches(labelsOf(get(spec, "template", "metadata", "labels"))) {
		out = append(out, Cause{Field: "spec.template.metadata.labels", Rule: "selectorMatch",
			Message: fmt.Sprintf("the template's labels do not match the selector %q", sel.String())})
	}
	return out
}

func jobChecks(doc map[string]any) []Cause {
	var out []Cause
	spec, _ := doc["spec"].(map[string]any)
	if tspec, ok := get(spec, "template", "spec").(map[string]any); ok {
		out = append(out, podSpecChecks(tspec, "spec.template.spec")...)
	}
	if rp, _ := get(spec, "template", "spec", "restartPolicy").(string); rp == "Always" {
		out = append(out, Cause{Field: "spec.template.spec.restartPolicy", Rule: "enum",
			Message: `a Job's pods must use restartPolicy OnFailure or Never`})
	}
	if sel, ok := spec["selector"]; ok {
		ls, _ := selectorOf(sel)
		s, err := ls.Selector()
		if err == nil && !s.Matches(labelsOf(get(spec, "template", "metadata", "labels"))) {
			out = append(out, Cause{Field: "spec.template.metadata.labels", Rule: "selectorMatch",
				Message: fmt.Sprintf("the template's labels do not match the selector %q", s.String())})
		}
	}
	return out
}

func definitionChecks(doc map[string]any) []Cause {
	var out []Cause
	spec, _ := doc["spec"].(map[string]any)
	group, _ := spec["group"].(string)
	plural, _ := spec["plural"].(string)
	name, _ := get(doc, "metadata", "name").(string)
	if want := plural + "." + group; name != want {
		out = append(out, Cause{Field: "metadata.name", Rule: "name",
			Message: fmt.Sprintf("a ResourceDefinition must be named <plural>.<group>, here %q", want)})
	}
	if Builtin(group, plural) || strings.HasSuffix(group, "homeostat.io") {
		out = append(out, Cause{Field: "spec.group", Rule: "reserved",
			Message: fmt.Sprintf("group %q is reserved for built-in kinds", group)})
	}
	if sch, ok := spec["schema"]; ok {
		if _, err := compileCustom(customSchemaURL(plural, group), sch, scopeOf(spec) == "Namespaced", nil); err != nil {
			out = append(out, Cause{Field: "spec.schema", Rule: "schema", Message: "not a usable JSON Schema: " + err.Error()})
		}
	}
	return out
}

func scopeOf(spec map[string]any) string {
	if s, _ := spec["scope"].(string); s != "" {
		return s
	}
	return "Namespaced"
}
