package nodeagent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/services/nodeagent/process"
)

// Handler serves the logs of the given agents' containers:
// GET /logs/{namespace}/{pod}?container=&follow=1&previous=1&tailLines=N&timestamps=1&sinceSeconds=N&sinceTime=T.
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
		opts, err := logOptionsOf(q, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := streamLog(r.Context(), w, path, opts); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}

// logOptions are what a log request asks for.
type logOptions struct {
	tail       int
	follow     bool
	timestamps bool      // keep each line's time
	since      time.Time // only lines logged at or after; zero: all
}

func logOptionsOf(q url.Values, now time.Time) (logOptions, error) {
	flag := func(k string) bool { return q.Get(k) == "true" || q.Get(k) == "1" }
	o := logOptions{follow: flag("follow"), timestamps: flag("timestamps")}
	o.tail, _ = strconv.Atoi(q.Get("tailLines"))
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("sinceSeconds=%q must be a positive integer", v)
		}
		o.since = now.Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, fmt.Errorf("sinceTime=%q must be an RFC 3339 time", v)
		}
		o.since = t
	}
	return o, nil
}

// streamLog writes a log file (its last tail lines, when tail > 0) and,
// following, what is appended until ctx ends or the file goes away: each
// line with its time or without, and only those since the time asked.
func streamLog(ctx context.Context, w http.ResponseWriter, path string, o logOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if o.tail > 0 {
		if err := seekTail(f, o.tail); err != nil {
			return err
		}
	}
	flusher, _ := w.(http.Flusher)
	lines := &lineFilter{opts: o, out: w}
	buf := make([]byte, 32*1024)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if werr := lines.write(buf[:n]); werr != nil {
				return nil
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if !o.follow {
			_ = lines.flush()
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

// lineFilter passes whole lines of a log, each without the time the log
// shim put before it unless timestamps are asked for, and drops those
// older than since. A line with no time (written before the agent had a
// shim) passes as it is.
type lineFilter struct {
	opts    logOptions
	out     io.Writer
	partial []byte
}

func (l *lineFilter) write(p []byte) error {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.partial = append(l.partial, p...)
			return nil
		}
		line := append(l.partial, p[:i+1]...)
		l.partial = nil
		p = p[i+1:]
		if err := l.emit(line); err != nil {
			return err
		}
	}
	return nil
}

// flush passes what is left of a last line that has no end yet.
func (l *lineFilter) flush() error {
	if len(l.partial) == 0 {
		return nil
	}
	line := l.partial
	l.partial = nil
	return l.emit(line)
}

func (l *lineFilter) emit(line []byte) error {
	n := len(process.StampLayout)
	if len(line) > n && line[n] == ' ' {
		if t, err := time.Parse(process.StampLayout, string(line[:n])); err == nil {
			if !l.opts.since.IsZero() && t.Before(l.opts.since) {
				return nil
			}
			if !l.opts.timestamps {
				line = line[n+1:]
			}
		}
	}
	_, err := l.out.Write(line)
	return err
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
