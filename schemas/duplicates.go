package schemas

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// DuplicateFields lists the paths of the members a JSON document names
// twice in one object (spec.replicas, spec.containers[0].name), which a
// decoder would otherwise settle silently by keeping the last. Malformed
// input yields what was found before it; decoding reports the error.
func DuplicateFields(data []byte) []string {
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
