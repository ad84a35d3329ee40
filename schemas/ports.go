package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
)

// portChecks are the rules for a pod's ports that a schema cannot say. A
// pod's processes share their node's network, so a port is the node's:
//   - a port without a number (containerPort 0) is named, since the node
//     passes the number it picks as PORT_<NAME>;
//   - a hostPort, when set, is the containerPort;
//   - a container names each port once, and no two ports of the pod take
//     the same number and protocol.
func portChecks(spec map[string]any, at string) []Cause {
	var out []Cause
	taken := map[string]string{} // protocol/number -> the field that took it
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for i, c := range cs {
			cm, _ := c.(map[string]any)
			ports, _ := cm["ports"].([]any)
			names := map[string]bool{}
			for j, p := range ports {
				pm, _ := p.(map[string]any)
				field := fmt.Sprintf("%s.%s[%d].ports[%d]", at, list, i, j)
				out = append(out, portCheck(pm, field, names, taken)...)
			}
		}
	}
	return out
}

func portCheck(pm map[string]any, field string, names map[string]bool, taken map[string]string) []Cause {
	var out []Cause
	name, _ := pm["name"].(string)
	number := intOf(pm["containerPort"])
	switch {
	case name == "" && number == 0:
		out = append(out, Cause{Field: field + ".name", Rule: "required",
			Message: "a port without a number (containerPort 0) is named: its node picks the number and passes it as PORT_<NAME>"})
	case names[name]:
		out = append(out, Cause{Field: field + ".name", Rule: "unique", Message: fmt.Sprintf("port name %q is used twice in the container", name)})
	}
	if name != "" {
		names[name] = true
	}
	if hp, ok := pm["hostPort"]; ok && intOf(hp) != number {
		out = append(out, Cause{Field: field + ".hostPort", Rule: "equal",
			Message: "a pod's processes share their node's network: hostPort, when set, equals containerPort (and is not set for a port the node picks)"})
	}
	if number == 0 {
		return out
	}
	proto, _ := pm["protocol"].(string)
	if proto == "" {
		proto = "TCP"
	}
	key := fmt.Sprintf("%s/%d", strings.ToUpper(proto), number)
	if first, dup := taken[key]; dup {
		out = append(out, Cause{Field: field + ".containerPort", Rule: "unique",
			Message: fmt.Sprintf("port %s is taken already by %s: the pod's processes share one network", key, first)})
	} else {
		taken[key] = field
	}
	return out
}

// intOf reads a JSON number as decoded into a map; 0 when v is none.
func intOf(v any) int64 {
	switch n := v.(type) {
	case json.Number:
		i, _ := n.Int64()
		return i
	case float64:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return 0
}
