package schemas

import "fmt"

// serviceChecks are Kubernetes' rules for a Service's ports that a schema
// cannot say: a Service other than a headless or ExternalName one has
// ports; with more than one, each is named, and names and port/protocol
// pairs are unique; an ExternalName Service names its host; node ports are
// for NodePort and LoadBalancer Services.
func serviceChecks(doc map[string]any) []Cause {
	spec, _ := doc["spec"].(map[string]any)
	typ, _ := spec["type"].(string)
	ports, _ := spec["ports"].([]any)
	var out []Cause
	switch {
	case typ == "ExternalName":
		if name, _ := spec["externalName"].(string); name == "" {
			out = append(out, Cause{Field: "spec.externalName", Rule: "required", Message: "an ExternalName Service names the host it stands for"})
		}
	case len(ports) == 0 && spec["clusterIP"] != "None":
		out = append(out, Cause{Field: "spec.ports", Rule: "required", Message: "a Service has at least one port, unless it is headless (clusterIP: None)"})
	}
	names, pairs := map[string]bool{}, map[string]bool{}
	for i, p := range ports {
		port, _ := p.(map[string]any)
		at := fmt.Sprintf("spec.ports[%d]", i)
		name, _ := port["name"].(string)
		switch {
		case name == "" && len(ports) > 1:
			out = append(out, Cause{Field: at + ".name", Rule: "required", Message: "each port of a Service with several is named"})
		case name != "" && names[name]:
			out = append(out, Cause{Field: at + ".name", Rule: "unique", Message: fmt.Sprintf("port name %q is taken by an earlier port", name)})
		}
		names[name] = true
		pair := fmt.Sprintf("%v/%v", port["port"], port["protocol"])
		if pairs[pair] {
			out = append(out, Cause{Field: at, Rule: "unique", Message: fmt.Sprintf("port %s is taken by an earlier port", pair)})
		}
		pairs[pair] = true
		if _, ok := port["nodePort"]; ok && typ != "NodePort" && typ != "LoadBalancer" {
			out = append(out, Cause{Field: at + ".nodePort", Rule: "forbidden", Message: "only a NodePort or LoadBalancer Service has node ports"})
		}
	}
	return out
}
