package manifest

import (
	"encoding/json"
	"strings"
)

// expandList returns the items of a kind: List (or FooList) document, or the
// document itself.
func expandList(j []byte) ([][]byte, error) {
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(j, &head); err != nil {
		return nil, err
	}
	if !strings.HasSuffix(head.Kind, "List") || head.Items == nil {
		return [][]byte{j}, nil
	}
	out := make([][]byte, 0, len(head.Items))
	for _, it := range head.Items {
		if len(it) == 0 || it[0] != '{' {
			return nil, ErrNotObject
		}
		out = append(out, it)
	}
	return out, nil
}
