package table

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/schemas"
)

// Printed are the columns of a custom kind that declares some (as a
// CustomResourceDefinition's additionalPrinterColumns): the name, then
// those, as Kubernetes prints a custom resource. A date column shows the
// time since its value, as Age does.
func Printed(cols []schemas.PrinterColumn) []Column {
	out := []Column{nameCol}
	for _, pc := range cols {
		path, typ := pc.JSONPath, pc.Type
		c := Column{Name: pc.Name, Type: typ, Format: pc.Format, Description: pc.Description, Priority: pc.Priority}
		c.Cell = func(_ *object.Object, d map[string]any) any {
			vals := Eval(d, path)
			if len(vals) == 0 {
				return nil
			}
			return cell(typ, vals)
		}
		out = append(out, c)
	}
	return out
}

func cell(typ string, vals []any) any {
	if len(vals) == 1 {
		switch v := vals[0].(type) {
		case float64:
			if typ == "integer" {
				return int64(v)
			}
			return v
		case bool:
			return v
		case string:
			if typ == "date" {
				return sinceRFC3339(v)
			}
			return v
		}
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

// Eval is what a JSONPath of the forms printer columns use selects in a
// decoded object: .field steps, [n] and [*] indexes, and [?(@.k=="v")]
// filters, as in .status.conditions[?(@.type=="Ready")].status.
func Eval(doc any, path string) []any {
	cur := []any{doc}
	p := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(path), "{"), "}")
	for p != "" && len(cur) > 0 {
		switch {
		case p[0] == '.':
			end := strings.IndexAny(p[1:], ".[")
			if end < 0 {
				end = len(p) - 1
			}
			name := p[1 : 1+end]
			p = p[1+end:]
			cur = step(cur, func(v any) []any {
				if m, ok := v.(map[string]any); ok {
					if x, ok := m[name]; ok {
						return []any{x}
					}
				}
				return nil
			})
		case p[0] == '[':
			end := strings.Index(p, "]")
			if end < 0 {
				return nil
			}
			sel := p[1:end]
			p = p[end+1:]
			cur = step(cur, func(v any) []any { return index(v, sel) })
		default:
			return nil
		}
	}
	return cur
}

func step(cur []any, f func(any) []any) []any {
	var out []any
	for _, v := range cur {
		out = append(out, f(v)...)
	}
	return out
}

// index applies one bracket: n, *, or ?(@.key=="value").
func index(v any, sel string) []any {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	if sel == "*" {
		return list
	}
	if n, err := strconv.Atoi(sel); err == nil {
		if n < 0 {
			n += len(list)
		}
		if n >= 0 && n < len(list) {
			return []any{list[n]}
		}
		return nil
	}
	cond, ok := strings.CutPrefix(sel, "?(@.")
	if !ok || !strings.HasSuffix(cond, ")") {
		return nil
	}
	key, want, ok := strings.Cut(strings.TrimSuffix(cond, ")"), "==")
	if !ok {
		return nil
	}
	want = strings.Trim(strings.TrimSpace(want), `"'`)
	var out []any
	for _, item := range list {
		if m, ok := item.(map[string]any); ok && fmt.Sprint(m[strings.TrimSpace(key)]) == want {
			out = append(out, item)
		}
	}
	return out
}
