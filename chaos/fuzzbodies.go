package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/homeostat/homeostat/client"
)

// The fuzzers' corpora (and the seeds they grew from) are bodies the API
// must survive: posted as objects of several kinds, each must be answered
// 2xx or 4xx, never 5xx (but 503), and whatever is stored must read back.

const fuzzNamespace = "chaos-fuzz"

var fuzzTargets = []client.Resource{
	{Version: "v1", Kind: "Pod", Plural: "pods", Namespaced: true},
	{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true},
	{Group: "batch", Version: "v1", Kind: "Job", Plural: "jobs", Namespaced: true},
	registers,
}

// readCorpora reads every corpus file (`go test fuzz v1` format) in dirs.
func readCorpora(dirs []string) ([][]byte, error) {
	var out [][]byte
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("chaos: fuzz corpus: %w", err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			if v, ok := corpusValue(b); ok {
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// corpusValue decodes a corpus file holding one []byte or string value.
func corpusValue(file []byte) ([]byte, bool) {
	sc := bufio.NewScanner(bytes.NewReader(file))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() || sc.Text() != "go test fuzz v1" || !sc.Scan() {
		return nil, false
	}
	line := sc.Text()
	for _, prefix := range []string{"[]byte(", "string("} {
		if inner, ok := strings.CutPrefix(line, prefix); ok {
			v, err := strconv.Unquote(strings.TrimSuffix(inner, ")"))
			return []byte(v), err == nil
		}
	}
	return nil, false
}

// fuzzer posts corpus entries, and mutations of them, to the API.
type fuzzer struct {
	bodies [][]byte

	mu       sync.Mutex
	sent     int
	failures []string
}

func (f *fuzzer) mutate(b []byte) []byte {
	b = append([]byte(nil), b...)
	switch rand.IntN(4) {
	case 0:
		if len(b) > 1 {
			b = b[:rand.IntN(len(b))] // cut short
		}
	case 1:
		if len(b) > 0 {
			b[rand.IntN(len(b))] ^= byte(1 << rand.IntN(8)) // a flipped bit
		}
	case 2:
		b = bytes.Replace(b, []byte("1"), []byte("99999999999999999999"), 1) // a number too large
	}
	return b
}

// post sends n bodies and checks every answer.
func (f *fuzzer) post(ctx context.Context, a apis, n int) {
	for range n {
		body := f.bodies[rand.IntN(len(f.bodies))]
		if rand.IntN(2) == 0 {
			body = f.mutate(body)
		}
		res := fuzzTargets[rand.IntN(len(fuzzTargets))]
		ct := "application/json"
		if rand.IntN(3) == 0 {
			ct = "application/yaml"
		}
		f.one(ctx, a.client(rand.IntN(4)), res, body, ct)
	}
}

func (f *fuzzer) one(ctx context.Context, c *client.Client, res client.Resource, body []byte, ct string) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var created struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	err := c.Do(rctx, http.MethodPost, res.Path(fuzzNamespace, ""), body, ct, &created)
	f.mu.Lock()
	f.sent++
	f.mu.Unlock()
	code := client.StatusCode(err)
	switch {
	case err == nil:
		// Stored: it must read back as an object, and then goes.
		if _, gerr := c.Get(rctx, res, fuzzNamespace, created.Metadata.Name); gerr != nil && client.StatusCode(gerr) != http.StatusServiceUnavailable {
			f.fail("%s %s was stored from a fuzzed body but reads back as %v", res.Plural, created.Metadata.Name, gerr)
		}
		_, _ = c.Delete(rctx, res, fuzzNamespace, created.Metadata.Name, client.DeleteOptions{GracePeriodSeconds: new(int64)})
	case code >= 500 && code != http.StatusServiceUnavailable:
		f.fail("POST %s answered %d to a fuzzed body %q: %v", res.Plural, code, clip(body, 120), err)
	}
}

func (f *fuzzer) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

// clip shortens b to at most n bytes for a message.
func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
