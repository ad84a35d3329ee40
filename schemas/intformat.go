package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"
)

// Integer formats.
//
// Every integer field of the built-in schemas says which Go type holds it,
// `format: int32` or `format: int64`, as in OpenAPI and Kubernetes. In
// draft 2020-12 `format` is only an annotation, so a small vocabulary
// asserts these two formats, and no others: the value must be a whole
// number within the type's range, written without a decimal point or
// exponent (encoding/json refuses 1e3 or 1.0 for an int32). Otherwise an
// object is stored that every controller then fails to decode, over and
// over. Custom kinds get the same check where their schemas say int32 or
// int64, as a CustomResourceDefinition does; their other formats stay
// annotations.

// intFormatVocabURL names the vocabulary; it is never fetched.
const intFormatVocabURL = "https://homeostat.io/schemas/vocab/int-format"

// intFormat is the range of one Go integer type.
type intFormat struct {
	name     string
	min, max int64
}

var intFormats = map[string]intFormat{
	"int32": {"int32", math.MinInt32, math.MaxInt32},
	"int64": {"int64", math.MinInt64, math.MaxInt64},
}

// intFormatVocab asserts format int32 and int64. Registering a vocabulary
// with AssertVocabs makes the compiler validate schema documents against
// the default vocabularies' metaschemas plus this vocabulary's Schema, so
// Schema carries the 2020-12 meta-data, format-annotation and content
// metaschemas that the default vocabularies leave out: schema documents
// are checked exactly as before.
var intFormatVocab = sync.OnceValue(func() *jsonschema.Vocabulary {
	const url = intFormatVocabURL + "/meta"
	meta := map[string]any{
		"$schema":        "https://json-schema.org/draft/2020-12/schema",
		"$id":            url,
		"$dynamicAnchor": "meta",
		"allOf": []any{
			map[string]any{"$ref": "https://json-schema.org/draft/2020-12/meta/meta-data"},
			map[string]any{"$ref": "https://json-schema.org/draft/2020-12/meta/format-annotation"},
			map[string]any{"$ref": "https://json-schema.org/draft/2020-12/meta/content"},
		},
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, meta); err != nil {
		panic("schemas: int-format metaschema: " + err.Error())
	}
	return &jsonschema.Vocabulary{
		URL:     intFormatVocabURL,
		Schema:  c.MustCompile(url),
		Compile: compileIntFormat,
	}
})

func compileIntFormat(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
	name, _ := obj["format"].(string)
	f, ok := intFormats[name]
	if !ok {
		return nil, nil
	}
	return f, nil
}

// Validate implements jsonschema.SchemaExt.
func (f intFormat) Validate(ctx *jsonschema.ValidatorContext, v any) {
	if k := f.check(v); k != nil {
		ctx.AddError(k)
	}
}

// check returns why v does not fit the format, or nil. Values that are not
// numbers (the string of an int-or-string field, null) are left to the
// other keywords.
func (f intFormat) check(v any) *intFormatError {
	var lit string
	switch n := v.(type) {
	case json.Number:
		lit = string(n)
	case float64:
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return nil
		}
		lit = strconv.FormatFloat(n, 'f', -1, 64)
	case float32:
		lit = strconv.FormatFloat(float64(n), 'f', -1, 32)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		lit = fmt.Sprint(n)
	default:
		return nil
	}
	e := &intFormatError{Format: f.name, Got: lit}
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		// The common case: a plain integer literal.
		switch {
		case n > f.max:
			e.Problem, e.Bound = aboveMaximum, f.max
		case n < f.min:
			e.Problem, e.Bound = belowMinimum, f.min
		default:
			return nil
		}
		return e
	}
	// Out of int64, or written with a fraction or an exponent: refused
	// either way, so the parse only needs to say why. The validator's own
	// big.Rat takes tens of milliseconds for 1e999999; a 256-bit float
	// takes microseconds and is exact for any literal of up to 77 digits.
	x, _, err := big.ParseFloat(lit, 10, 256, big.ToNearestEven)
	switch {
	case err != nil: // an exponent beyond any float
		e.Problem = notPlain
	case x.Cmp(new(big.Float).SetInt64(f.max)) > 0:
		e.Problem, e.Bound = aboveMaximum, f.max
	case x.Cmp(new(big.Float).SetInt64(f.min)) < 0:
		e.Problem, e.Bound = belowMinimum, f.min
	case !x.IsInt():
		e.Problem = notWhole
	default:
		e.Problem = notPlain
	}
	return e
}

// intProblem says how a number fails format int32 or int64.
type intProblem int

// The ways a number can fail an integer format.
const (
	aboveMaximum intProblem = iota + 1 // larger than the type holds
	belowMinimum                       // smaller than the type holds
	notWhole                           // has a fractional part
	notPlain                           // whole, but written as 1e3 or 1.0
)

// intFormatError is the jsonschema error kind of a number that does not
// fit format int32 or int64; leafCauses reports it under the rule "format".
type intFormatError struct {
	Format  string // int32 or int64
	Got     string // the number as written
	Problem intProblem
	Bound   int64 // the limit passed, for aboveMaximum and belowMinimum
}

// KeywordPath implements jsonschema.ErrorKind.
func (*intFormatError) KeywordPath() []string { return []string{"format"} }

// LocalizedString implements jsonschema.ErrorKind. It does not format
// numbers through the printer, which would group their digits.
func (e *intFormatError) LocalizedString(*message.Printer) string {
	bound := strconv.FormatInt(e.Bound, 10)
	switch e.Problem {
	case aboveMaximum:
		return "must be at most " + bound + " (" + e.Format + ")"
	case belowMinimum:
		return "must be at least " + bound + " (" + e.Format + ")"
	case notWhole:
		return "must be a whole number (" + e.Format + ")"
	default:
		return "must be written without a decimal point or exponent, got " + e.Got + " (" + e.Format + ")"
	}
}
