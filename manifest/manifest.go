// Package manifest decodes what users write — YAML or JSON, one document or
// many — into JSON objects, the way kubectl does: YAML is converted to JSON
// first, so that every later layer sees only JSON.
package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// Document is one decoded manifest.
type Document struct {
	// JSON is the document as a JSON object.
	JSON []byte
	// Index counts documents from 1 within their source, for error messages.
	Index int
}

// ErrNotObject: a document is not a mapping (a list or a scalar).
var ErrNotObject = errors.New("a manifest must be an object")

// Decode splits a stream into documents (YAML "---" separators; a JSON
// stream holds one document) and converts each to JSON. Empty documents
// are skipped.
func Decode(r io.Reader) ([]Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return DecodeBytes(data)
}

// DecodeBytes is Decode over a byte slice.
func DecodeBytes(data []byte) ([]Document, error) {
	var out []Document
	for i, raw := range splitYAML(data) {
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		j, err := ToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		// A top-level List is expanded, as kubectl does.
		items, err := expandList(j)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		for _, it := range items {
			out = append(out, Document{JSON: it, Index: i + 1})
		}
	}
	return out, nil
}

// ToJSON converts one YAML or JSON document to a JSON object.
func ToJSON(raw []byte) ([]byte, error) {
	// A key written twice is refused, as Kubernetes refuses a duplicate
	// field, rather than silently taking the last.
	j, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML or JSON: %w", err)
	}
	t := bytes.TrimSpace(j)
	if len(t) == 0 || t[0] != '{' {
		return nil, ErrNotObject
	}
	return t, nil
}

func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "---") && strings.TrimSpace(strings.TrimLeft(line, "-")) == "" {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	return append(docs, cur.Bytes())
}

func stripComments(b []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
