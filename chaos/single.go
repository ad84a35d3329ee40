package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/client"
	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kubeconfig"
)

// single is `homeostat up` in one process, restarted over its data
// directory after each kill. Its API and NATS ports are new at each start,
// so clients ask it for the current address.
type single struct {
	dir      string
	nodeName string
	up       *proc

	mu   sync.Mutex
	api  string
	nats string
	// httpc reaches the API as the admin of the kubeconfig up wrote.
	httpc   *http.Client
	clients map[string]*client.Client
}

var (
	apiLine  = regexp.MustCompile(`API:\s+(https://\S+)`)
	natsLine = regexp.MustCompile(`NATS:\s+(nats://\S+)`)
)

func startSingle(ctx context.Context, dir, bin string) (*single, error) {
	s := &single{dir: dir, nodeName: runNodeName("chaos-", dir), clients: map[string]*client.Client{}}
	s.up = newProc(dir, "up", bin, "up", "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0",
		"--nats-listen", "127.0.0.1:0", "--node-name", s.nodeName, "--restart-backoff", "1s", "--log-level", "warn")
	s.up.env = []string{"OTEL_TRACES_EXPORTER=", "HOMEOSTAT_SERVER=", "KUBECONFIG="}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// start runs `up` and waits until its API is ready.
func (s *single) start(ctx context.Context) error {
	if err := s.up.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		api, nats := s.addresses()
		if api != "" && nats != "" {
			// Written before the API's address is printed.
			target, err := kubeconfig.LoadTarget(filepath.Join(s.dir, "data", "admin.kubeconfig"))
			if err != nil {
				return err
			}
			if hc := target.HTTPClient(); ready(ctx, hc, api) {
				s.mu.Lock()
				s.api, s.nats, s.httpc = api, nats, hc
				s.mu.Unlock()
				return nil
			}
		}
		if !s.up.running() || time.Now().After(deadline) {
			return fmt.Errorf("homeostat up did not become ready (see %s)", filepath.Join(s.dir, "up.log"))
		}
		if !clock.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// addresses reads the API and NATS addresses the latest start printed.
func (s *single) addresses() (api, nats string) {
	b, err := os.ReadFile(filepath.Join(s.dir, "up.log"))
	if err != nil {
		return "", ""
	}
	last := string(b)
	if i := strings.LastIndex(last, "==== start"); i >= 0 {
		last = last[i:]
	}
	if m := apiLine.FindStringSubmatch(last); m != nil {
		api = m[1]
	}
	if m := natsLine.FindStringSubmatch(last); m != nil {
		nats = m[1]
	}
	return api, nats
}

func ready(ctx context.Context, hc *http.Client, base string) bool {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, base+"/readyz", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (s *single) client(int) *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[s.api]
	if c == nil {
		c = client.New(s.api, s.httpc)
		c.SetReadRetry(0) // the harness records answers as they come
		s.clients[s.api] = c
	}
	return c
}

// busConfig reaches up's NATS server as up's own roles do, with the
// control plane's credentials it keeps in its data directory: the harness writes what no client of
// the API could.
func (s *single) busConfig(name string) (bus.Config, error) {
	s.mu.Lock()
	url := s.nats
	s.mu.Unlock()
	creds, err := os.ReadFile(filepath.Join(s.dir, "data", "nats", "homeostat.creds"))
	if err != nil {
		return bus.Config{}, fmt.Errorf("chaos: up's NATS credentials: %w", err)
	}
	return bus.Config{URLs: url, Creds: creds, Name: name, Replicas: 1}, nil
}

// faults of a single process: kill -9 and start again over the same data.
func (s *single) faults() []fault {
	return []fault{{
		name: "kill -9 and restart of up",
		inject: func(ctx context.Context) error {
			s.up.kill()
			return s.start(ctx)
		},
	}}
}

func (s *single) close() {
	s.up.close()
	killNodeProcesses(s.nodeName)
}

func (s *single) node() string { return s.nodeName }

func (s *single) badValues(ctx context.Context, n int) ([]string, error) {
	cfg, err := s.busConfig("")
	if err != nil {
		return nil, err
	}
	return writeBadValues(ctx, cfg, n)
}

// fault is one way to break the system: inject breaks it, heal (when set)
// mends it again.
type fault struct {
	name   string
	inject func(ctx context.Context) error
	heal   func(ctx context.Context) error
}
