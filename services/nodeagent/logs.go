package nodeagent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/clock"
)

// Handler serves the logs of the given agents' containers:
// GET /logs/{namespace}/{pod}?container=&follow=1&previous=1&tailLines=N.
func Handler(agents ...*Agent) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /logs/{ns}/{pod}", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var path string
		err := errors.New("no agent here runs that pod")
		for _, a := range agents {
			if path, err = a.LogPath(r.PathValue("ns"), r.PathValue("pod"), q.Get("container"), q.Get("previous") == "true" || q.Get("previous") == "1"); err == nil {
				break
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		tail, _ := strconv.Atoi(q.Get("tailLines"))
		follow := q.Get("follow") == "true" || q.Get("follow") == "1"
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := streamLog(r.Context(), w, path, tail, follow); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}

// streamLog writes a log file (its last tail lines, when tail > 0) and,
// following, what is appended until ctx ends or the file goes away.
func streamLog(ctx context.Context, w http.ResponseWriter, path string, tail int, follow bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if tail > 0 {
		if err := seekTail(f, tail); err != nil {
			return err
		}
	}
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32*1024)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if !follow {
			return nil
		}
		if flusher != nil {
			flusher.Flush()
		}
		if _, err := os.Stat(path); err != nil {
			return nil // the container's pod is gone
		}
		// A log truncated by rotation starts over.
		if st, err := f.Stat(); err == nil {
			if pos, _ := f.Seek(0, io.SeekCurrent); pos > st.Size() {
				_, _ = f.Seek(0, io.SeekStart)
			}
		}
		if !clock.Sleep(ctx, 200*time.Millisecond) {
			return nil
		}
	}
}

// seekTail positions f at the start of its last n lines.
func seekTail(f *os.File, n int) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var offsets []int64
	var pos int64
	for sc.Scan() {
		offsets = append(offsets, pos)
		pos += int64(len(sc.Bytes())) + 1
	}
	start := int64(0)
	if len(offsets) > n {
		start = offsets[len(offsets)-n]
	}
	if start > st.Size() {
		return fmt.Errorf("log changed while reading")
	}
	_, err = f.Seek(start, io.SeekStart)
	return err
}

// OnlyClient answers only requests whose verified client certificate names
// user: a log endpoint beyond loopback serves the API alone (the TLS
// listener verifies the certificate against the cluster's authority).
// Others get 403, even users of the same authority, who must go through
// the API and its RBAC.
func OnlyClient(user string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != user {
			http.Error(w, "forbidden: the agent serves logs to the API only", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
