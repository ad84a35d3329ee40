package process

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/kinds"
)

// probe runs the container's probes while the process lives. The startup
// probe gates the others; liveness and startup failures ask for a kill (on
// the returned channel); readiness sets the container's Ready.
func (s *supervisor) probe(ctx context.Context, p *proc) <-chan string {
	kill := make(chan string, 1)
	c := s.c
	if c.StartupProbe == nil && c.LivenessProbe == nil && c.ReadinessProbe == nil {
		return kill
	}
	go func() {
		if c.StartupProbe != nil {
			if err := s.until(ctx, c.StartupProbe, true); err != nil {
				if ctx.Err() == nil {
					kill <- "Startup probe failed: " + err.Error()
				}
				return
			}
			started := true
			s.set(func(cs *kinds.ContainerStatus) { cs.Started = &started; cs.Ready = c.ReadinessProbe == nil })
		}
		var wg sync.WaitGroup
		if c.LivenessProbe != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.until(ctx, c.LivenessProbe, false); err != nil && ctx.Err() == nil {
					kill <- "Liveness probe failed: " + err.Error()
				}
			}()
		}
		if c.ReadinessProbe != nil {
			wg.Add(1)
			go func() { defer wg.Done(); s.readiness(ctx, c.ReadinessProbe) }()
		}
		wg.Wait()
	}()
	return kill
}

func periods(pr *kinds.Probe) (initial, period, timeout time.Duration, success, failure int) {
	initial = time.Duration(pr.InitialDelaySeconds) * time.Second
	period = time.Duration(max(pr.PeriodSeconds, 1)) * time.Second
	timeout = time.Duration(max(pr.TimeoutSeconds, 1)) * time.Second
	return initial, period, timeout, int(max(pr.SuccessThreshold, 1)), int(max(pr.FailureThreshold, 1))
}

// until probes every period: with untilSuccess it returns nil at the first
// success (startup); otherwise it runs until ctx ends and returns the last
// error after failureThreshold failures in a row (liveness).
func (s *supervisor) until(ctx context.Context, pr *kinds.Probe, untilSuccess bool) error {
	initial, period, timeout, _, failures := periods(pr)
	if !clock.Sleep(ctx, initial) {
		return nil
	}
	failed := 0
	for {
		err := s.check(ctx, pr, timeout)
		switch {
		case err == nil && untilSuccess:
			return nil
		case err == nil:
			failed = 0
		default:
			failed++
			if failed >= failures {
				return err
			}
		}
		if !clock.Sleep(ctx, period) {
			return nil
		}
	}
}

func (s *supervisor) readiness(ctx context.Context, pr *kinds.Probe) {
	initial, period, timeout, successes, failures := periods(pr)
	if !clock.Sleep(ctx, initial) {
		return
	}
	ok, bad := 0, 0
	for {
		if err := s.check(ctx, pr, timeout); err == nil {
			ok, bad = ok+1, 0
			if ok == successes {
				s.setProbe(true, "")
			}
		} else {
			ok, bad = 0, bad+1
			if bad == failures {
				s.setProbe(false, "Readiness probe failed: "+truncate(firstLine(err.Error()), 120))
			}
		}
		if !clock.Sleep(ctx, period) {
			return
		}
	}
}

// check runs one probe.
func (s *supervisor) check(ctx context.Context, pr *kinds.Probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case pr.Exec != nil:
		who, err := s.runAs()
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, pr.Exec.Command[0], pr.Exec.Command[1:]...)
		cmd.Env, cmd.Dir = s.environ(0), s.c.WorkingDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: credential(who)}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, truncate(string(out), 200))
		}
		return nil
	case pr.HTTPGet != nil:
		return s.httpCheck(ctx, pr.HTTPGet)
	case pr.TCPSocket != nil:
		port, err := s.port(pr.TCPSocket.Port)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host(pr.TCPSocket.Host), strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return fmt.Errorf("the probe has no handler")
}

func (s *supervisor) httpCheck(ctx context.Context, h *kinds.HTTPGetAction) error {
	port, err := s.port(h.Port)
	if err != nil {
		return err
	}
	scheme := "http"
	if h.Scheme == "HTTPS" {
		scheme = "https"
	}
	path := h.Path
	if path == "" {
		path = "/"
	}
	url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host(h.Host), strconv.Itoa(port)), path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for _, hd := range h.HTTPHeaders {
		req.Header.Set(hd.Name, hd.Value)
	}
	// Probes check liveness, not certificates, as in Kubernetes.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return nil
}

// port resolves a number or the name of a container port.
func (s *supervisor) port(p kinds.IntOrString) (int, error) {
	if !p.IsString {
		return int(p.Int), nil
	}
	for _, cp := range s.c.Ports {
		if cp.Name == p.Str {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.Str); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", s.c.Name, p.Str)
}

func host(h string) string {
	if h == "" {
		return "127.0.0.1"
	}
	return h
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// setProbe records the readiness probe's verdict, and why it failed.
func (s *supervisor) setProbe(ready bool, failure string) {
	s.mu.Lock()
	s.probeFailure = failure
	s.mu.Unlock()
	s.set(func(cs *kinds.ContainerStatus) { cs.Ready = ready })
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
