package schemas

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// DuplicateFields lists the paths of the members a JSON document names
// twice in one object (spec.replicas, spec.containers[0].name), which a
// decoder would otherwise settle silently by keeping the last. Malformed
// input yields what was found before it; decoding reports the error.
func DuplicateFields(data []byte) []string {
	// Most documents name each member once, which a validation of the
	// whole tells in a twentieth of the time of the walk that finds which
	// (names compared as decoded, so "a" and "\u0061" are one). What it
	// refuses (a name twice, invalid UTF-8, a syntax error) is walked.
	if jsontext.Value(data).IsValid() {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var dups []string
	_ = walkValue(dec, "", &dups)
	return dups
}

func walkValue(dec *json.Decoder, path string, dups *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			p := k
			if path != "" {
				p = path + "." + k
			}
			if seen[k] {
				*dups = append(*dups, p)
			}
			seen[k] = true
			if err := walkValue(dec, p, dups); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, path+"["+strconv.Itoa(i)+"]", dups); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}
