// Package console is Homeostat's web console: a page and its script,
// embedded in the binary (no CDN, no build step, works offline), that the
// API serves at /ui/ to anyone. Everything the page shows it reads from
// the API with the bearer token its user signs in with, so it shows only
// what RBAC lets that identity read, and every write it makes goes
// through the same checks as any other client's.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// Handler serves the console's files under Prefix.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree always has it
	}
	files := http.StripPrefix(Prefix, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page holds a token: it is never framed, and it loads only
		// its own files.
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
