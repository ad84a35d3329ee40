// Package console is Homeostat's web console: a page and its script,
// embedded in the binary (no CDN, no build step, works offline), that the
// API serves at /ui/ to anyone. Everything the page shows it reads from
// the API with the bearer token its user signs in with, so it shows only
// what RBAC lets that identity read, and every write it makes goes
// through the same checks as any other client's.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// CSP is the console's Content-Security-Policy.
const CSP = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; object-src 'none'"

// Handler serves the console's files under Prefix.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree always has it
	}
	tags := etags(sub)
	files := http.StripPrefix(Prefix, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page holds a token: it is never framed, it loads only its
		// own files (no inline script or style), it submits no form
		// anywhere, and it names no page it came from.
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", CSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		// Revalidated on each load, so that a new binary's console is
		// used at once.
		w.Header().Set("Cache-Control", "no-cache")
		// Embedded files have no modification time: an ETag of each
		// file's contents lets a reload revalidate with a 304.
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" {
			name = "index.html"
		}
		if tag, ok := tags[name]; ok {
			w.Header().Set("ETag", tag)
		}
		files.ServeHTTP(w, r)
	})
}

// etags are the ETags of the embedded files, by path.
func etags(files fs.FS) map[string]string {
	tags := map[string]string{}
	_ = fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		tags[path] = `"` + hex.EncodeToString(sum[:8]) + `"`
		return nil
	})
	return tags
}
