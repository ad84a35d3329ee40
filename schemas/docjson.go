package schemas

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// A document is JSON as the schema checks and the defaults read it:
// map[string]any, []any, string, bool, nil, and numbers as the
// encoding/json Number they were written as, kept exact. DecodeJSON and
// EncodeJSON read and write one as encoding/json does (with UseNumber),
// byte for byte, in about half the time and a fifth of the allocations:
// every write through the API made four such trips. encoding/json's
// reader copies its input into a buffer of its own and its writer
// sorts each map's keys by reflection.

// docOptions read a document as encoding/json would: a repeated member's
// last value wins, and invalid UTF-8 is read as U+FFFD.
var docOptions = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

var docDecoders = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewBuffer(nil), docOptions) }}

// noInput is what a pooled decoder reads between uses, so that it does
// not hold on to the last caller's bytes; no decoder reads it.
var noInput = new(bytes.Reader)

// DecodeJSON decodes one JSON document, keeping numbers exact; anything
// after it but white space is an error. (The encoding/json reader it
// replaced let a closing bracket through after the document, as in
// `{}}`: its Decoder.More reports none there.)
func DecodeJSON(b []byte) (any, error) {
	d := docDecoders.Get().(*jsontext.Decoder)
	defer func() {
		d.Reset(noInput, docOptions)
		docDecoders.Put(d)
	}()
	// A bytes.Buffer is read in place, not copied.
	d.Reset(bytes.NewBuffer(b), docOptions)
	v, err := readValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON document")
	}
	return v, nil
}

// readValue reads the next value of d as a document.
func readValue(d *jsontext.Decoder) (any, error) {
	t, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	switch t.Kind() {
	case '{':
		m := map[string]any{}
		for d.PeekKind() != '}' {
			k, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			name := k.String() // before the next read voids k
			if m[name], err = readValue(d); err != nil {
				return nil, err
			}
		}
		_, err := d.ReadToken()
		return m, err
	case '[':
		a := []any{}
		for d.PeekKind() != ']' {
			v, err := readValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.ReadToken()
		return a, err
	case '"':
		return t.String(), nil
	case '0':
		return stdjson.Number(t.String()), nil
	case 't', 'f':
		return t.Bool(), nil
	}
	return nil, nil // null
}

// docWrite writes as encoding/json.Marshal does (keys sorted, HTML and
// line separators escaped), and a Number as its digits.
var docWrite = json.JoinOptions(jsonv1.DefaultOptionsV1(),
	json.WithMarshalers(json.MarshalToFunc(func(enc *jsontext.Encoder, n stdjson.Number) error {
		if n == "" {
			n = "0" // as encoding/json writes the zero Number
		}
		// Digits alone, as encoding/json checks: a raw value would take
		// any JSON, spaced.
		if v := jsontext.Value(n); v.Kind() != '0' || strings.TrimSpace(string(n)) != string(n) {
			return fmt.Errorf("json: invalid number literal %q", string(n))
		}
		return enc.WriteValue(jsontext.Value(n))
	})))

// EncodeJSON writes v (a document, or any value encoding/json can write)
// as encoding/json.Marshal would.
func EncodeJSON(v any) ([]byte, error) {
	return json.Marshal(v, docWrite)
}
