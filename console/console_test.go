package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homeostat/homeostat/console"
)

func get(t *testing.T, h http.Handler, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestHandlerServesThePage: the page and its files, each with its type,
// the page's security headers and an ETag a reload revalidates with.
func TestHandlerServesThePage(t *testing.T) {
	h := console.Handler()
	for path, typ := range map[string]string{
		"/ui/":            "text/html",
		"/ui/app.js":      "text/javascript",
		"/ui/console.css": "text/css",
		"/ui/icon.svg":    "image/svg+xml",
	} {
		resp := get(t, h, path, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("GET %s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, typ) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, ct, typ)
		}
		for k, want := range map[string]string{
			"Content-Security-Policy": console.CSP,
			"X-Frame-Options":         "DENY",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           "no-cache",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, k, got, want)
			}
		}
		tag := resp.Header.Get("ETag")
		if tag == "" {
			t.Fatalf("GET %s: no ETag", path)
		}
		if again := get(t, h, path, map[string]string{"If-None-Match": tag}); again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match: %d, want 304", path, again.StatusCode)
		}
	}
	if resp := get(t, h, "/ui/nothing.js", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET a missing file: %d, want 404", resp.StatusCode)
	}
}

// TestStaticFilesKeepThePolicy: the page works under its own policy and
// offline: no inline script, style or handler, nothing from another
// origin, and every module it loads is one of its files.
func TestStaticFilesKeepThePolicy(t *testing.T) {
	files := os.DirFS("static")
	scripts := regexp.MustCompile(`<script[^>]*>`)
	inline := []*regexp.Regexp{
		regexp.MustCompile(`<script[^>]*>[^<]`), // a script with a body
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`javascript:`),
	}
	remote := regexp.MustCompile(`(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`)
	importRe := regexp.MustCompile(`(?m)^import .* from '(\./[a-z]+\.js)';$`)
	attrs := regexp.MustCompile(`(?:href|src)="([^"]+)"`)
	n := 0
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		text := string(b)
		if strings.HasSuffix(path, ".html") {
			for _, re := range inline {
				if m := re.FindString(text); m != "" {
					t.Errorf("%s: %q breaks the page's Content-Security-Policy", path, m)
				}
			}
			for _, tag := range scripts.FindAllString(text, -1) {
				if !strings.Contains(tag, " src=") {
					t.Errorf("%s: %s is an inline script", path, tag)
				}
			}
			for _, m := range attrs.FindAllStringSubmatch(text, -1) {
				if strings.HasPrefix(m[1], "#") {
					continue // a route of the page itself
				}
				if _, err := fs.Stat(files, m[1]); err != nil {
					t.Errorf("%s refers to %s, which is not among the console's files", path, m[1])
				}
			}
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "xmlns") {
				continue // an XML namespace names, it does not fetch
			}
			if m := remote.FindString(line); m != "" {
				t.Errorf("%s loads from another origin: %s", path, m)
			}
		}
		if filepath.Ext(path) == ".js" {
			for _, m := range importRe.FindAllStringSubmatch(text, -1) {
				if _, err := fs.Stat(files, strings.TrimPrefix(m[1], "./")); err != nil {
					t.Errorf("%s imports %s, which is not among the console's files", path, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("only %d files under static/", n)
	}
}
