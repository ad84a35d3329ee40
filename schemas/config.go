package schemas

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"sort"
)

// configKey is the form of a ConfigMap's or Secret's key, as Kubernetes
// has it: it becomes a file name and, through envFrom, a variable name.
var configKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// maxConfigBytes bounds a ConfigMap's or Secret's values, as Kubernetes
// does; they travel whole to every pod that reads them.
const maxConfigBytes = 1 << 20

// configMapChecks: keys well formed and in one of data and binaryData,
// binaryData base64, and the values within the size bound.
func configMapChecks(doc map[string]any) []Cause {
	data, _ := doc["data"].(map[string]any)
	bin, _ := doc["binaryData"].(map[string]any)
	out, size := configValues("data", data, false)
	more, n := configValues("binaryData", bin, true)
	out, size = append(out, more...), size+n
	for _, k := range sortedKeys(bin) {
		if _, ok := data[k]; ok {
			out = append(out, Cause{Field: "binaryData[" + k + "]", Rule: "unique",
				Message: fmt.Sprintf("key %q is in both data and binaryData; a key may be in only one", k)})
		}
	}
	return append(out, sizeCause(size)...)
}

// secretChecks: keys well formed, data base64, values within the bound.
func secretChecks(doc map[string]any) []Cause {
	data, _ := doc["data"].(map[string]any)
	out, size := configValues("data", data, true)
	return append(out, sizeCause(size)...)
}

func sizeCause(size int) []Cause {
	if size <= maxConfigBytes {
		return nil
	}
	return []Cause{{Field: "data", Rule: "maxSize",
		Message: fmt.Sprintf("the values take %d bytes; they may take at most %d", size, maxConfigBytes)}}
}

// configValues checks one map of values and sums their decoded sizes.
func configValues(field string, m map[string]any, encoded bool) ([]Cause, int) {
	var out []Cause
	size := 0
	for _, k := range sortedKeys(m) {
		at := field + "[" + k + "]"
		if len(k) > 253 || !configKey.MatchString(k) {
			out = append(out, Cause{Field: at, Rule: "pattern",
				Message: fmt.Sprintf("key %q must be at most 253 letters, digits, '-', '_' or '.'", k)})
		}
		if k == "." || k == ".." {
			out = append(out, Cause{Field: at, Rule: "pattern", Message: fmt.Sprintf("key %q cannot be a file name", k)})
		}
		v, _ := m[k].(string)
		if !encoded {
			size += len(v)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			out = append(out, Cause{Field: at, Rule: "format", Message: "the value must be base64 (standard encoding, padded)"})
		}
		size += len(b)
	}
	return out, size
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// foldStringData moves a Secret's stringData into data, base64-encoded,
// over any value data has for the key: stringData is write-only, as in
// Kubernetes, so the stored Secret has data alone.
func foldStringData(doc map[string]any) {
	sd, ok := doc["stringData"].(map[string]any)
	if !ok {
		return
	}
	data, _ := doc["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	if len(data) > 0 {
		doc["data"] = data
	}
	delete(doc, "stringData")
}
