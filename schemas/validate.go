package schemas

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Cause is one failing field: where, which rule, and why.
type Cause struct {
	Field   string // e.g. spec.template.spec.containers[0].name
	Rule    string // the schema keyword or check broken, e.g. required, pattern
	Message string
}

// Invalid is a validation failure listing every failing field.
type Invalid struct {
	Kind   string
	Name   string
	Causes []Cause
}

// ErrInvalid is matched by every *Invalid with errors.Is.
var ErrInvalid = errors.New("invalid object")

func (e *Invalid) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q is invalid:", e.Kind, e.Name)
	for _, c := range e.Causes {
		fmt.Fprintf(&b, " %s: %s (%s);", c.Field, c.Message, c.Rule)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Invalid) Is(target error) bool { return target == ErrInvalid }

var printer = message.NewPrinter(language.English)

// Validate checks an object (decoded JSON, numbers as json.Number) against
// the kind's schema and its semantic checks. It returns nil or an *Invalid.
func (r *Resource) Validate(doc any) error {
	var causes []Cause
	if err := r.schema.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		causes = leafCauses(ve, causes)
	}
	if m, ok := doc.(map[string]any); ok && len(causes) == 0 && r.check != nil {
		causes = append(causes, r.check(m)...)
	}
	if len(causes) == 0 {
		return nil
	}
	sort.SliceStable(causes, func(i, j int) bool { return causes[i].Field < causes[j].Field })
	causes = dedupe(causes)
	name := ""
	if m, ok := doc.(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok {
			name, _ = md["name"].(string)
		}
	}
	return &Invalid{Kind: r.Kind, Name: name, Causes: causes}
}

// leafCauses flattens the error tree to its leaves, which name the precise
// field and keyword; inner nodes only say "a subschema failed".
func leafCauses(ve *jsonschema.ValidationError, out []Cause) []Cause {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			out = leafCauses(c, out)
		}
		return out
	}
	field := FieldPath(ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			out = append(out, Cause{Field: join(field, m), Rule: "required", Message: "required field is missing"})
		}
		return out
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			out = append(out, Cause{Field: join(field, p), Rule: "additionalProperties", Message: "unknown field"})
		}
		return out
	}
	rule := "schema"
	if kp := ve.ErrorKind.KeywordPath(); len(kp) > 0 {
		rule = kp[0]
	}
	if field == "" {
		field = "<root>"
	}
	return append(out, Cause{Field: field, Rule: rule, Message: ve.ErrorKind.LocalizedString(printer)})
}

func join(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}

// FieldPath renders a JSON location as spec.containers[0].name.
func FieldPath(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func dedupe(cs []Cause) []Cause {
	out := cs[:0]
	seen := map[Cause]bool{}
	for _, c := range cs {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}
