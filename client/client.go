// Package client talks to the Homeostat API over HTTP: discovery of the
// served kinds (so that "deploy" or "widgets.example.com" resolve to a
// path), the object verbs, watches, and server-side apply semantics built
// from JSON merge patches. Failed requests return the server's
// *object.Status as the error.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/homeostat/homeostat/clock"
	"github.com/homeostat/homeostat/object"
)

// Client is an API client. It is safe for concurrent use.
type Client struct {
	base string
	http *http.Client
	// readRetry bounds how long an idempotent read keeps trying while the
	// API or its bus cannot answer.
	readRetry time.Duration

	mu        sync.Mutex
	resources []Resource
}

// DefaultReadRetry is how long reads keep trying through a failover.
const DefaultReadRetry = 30 * time.Second

// New returns a client for the API at server (http://host:port).
func New(server string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	return &Client{base: strings.TrimSuffix(server, "/"), http: hc, readRetry: DefaultReadRetry}
}

// SetReadRetry sets how long reads (GET) keep trying while the API
// answers 503 or 429, or cannot be reached; 0 tries once.
func (c *Client) SetReadRetry(d time.Duration) { c.readRetry = d }

// Server is the base URL.
func (c *Client) Server() string { return c.base }

// Do sends a request and decodes a JSON response into out (when non-nil).
// A non-2xx answer becomes an *object.Status error. A read (GET) is
// idempotent, so while the API is unavailable (503, 429, no connection) it
// is tried again with a growing pause, as the API's Retry-After asks, for
// up to the client's read retry.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, contentType string, out any) error {
	if method != http.MethodGet || c.readRetry <= 0 {
		return c.do(ctx, method, path, body, contentType, out)
	}
	// Options, not fields set afterwards: the first pause is taken from the
	// initial interval when the backoff is built.
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMaxInterval(2*time.Second), backoff.WithMaxElapsedTime(c.readRetry))
	for {
		err := c.do(ctx, method, path, body, contentType, out)
		wait, retriable := retryAfter(err)
		if !retriable {
			return err
		}
		d := b.NextBackOff()
		if d == backoff.Stop {
			return err
		}
		// Retry-After is honoured, but never past the read retry.
		d = max(d, wait)
		if b.GetElapsedTime()+d > c.readRetry {
			return err
		}
		if !clock.Sleep(ctx, d) {
			return err
		}
	}
}

// unavailableError is a 503 or 429, with the pause the server asked for.
type unavailableError struct {
	*object.Status
	after time.Duration
}

func (e *unavailableError) Unwrap() error { return e.Status }

// retryAfter says whether err is worth trying again, and after how long
// at least.
func retryAfter(err error) (time.Duration, bool) {
	var ue *unavailableError
	var ne net.Error
	switch {
	case err == nil:
		return 0, false
	case errors.As(err, &ue):
		return ue.after, true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.As(err, &ne) && ne.Timeout():
		return 0, true
	}
	return 0, false
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, contentType string, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the Homeostat API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
		var st *object.Status
		errors.As(statusError(resp.StatusCode, data), &st)
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return &unavailableError{Status: st, after: time.Duration(secs) * time.Second}
	}
	if resp.StatusCode/100 != 2 {
		return statusError(resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decoding the answer to %s %s: %w", method, path, err)
		}
	}
	return nil
}

func statusError(code int, data []byte) error {
	var st object.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		return &object.Status{Code: code, Status: "Failure", Message: fmt.Sprintf("HTTP %d: %s", code, strings.TrimSpace(string(data)))}
	}
	return &st
}

// StatusCode returns the HTTP code of a Status error, or 0.
func StatusCode(err error) int {
	var st *object.Status
	if errors.As(err, &st) {
		return st.Code
	}
	return 0
}

// IsNotFound reports a 404.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// Get reads one object.
func (c *Client) Get(ctx context.Context, res Resource, namespace, name string) (*object.Object, error) {
	var o object.Object
	return &o, c.Do(ctx, http.MethodGet, res.Path(namespace, name), nil, "", &o)
}

// ListOptions select what List returns.
type ListOptions struct {
	LabelSelector string
	FieldSelector string
	Limit         int
	Continue      string
	// AllowWatchBookmarks asks a watch for BOOKMARK events: one each time it
	// has caught up, the first after the initial events.
	AllowWatchBookmarks bool
}

func (o ListOptions) query() string {
	q := url.Values{}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if o.FieldSelector != "" {
		q.Set("fieldSelector", o.FieldSelector)
	}
	if o.Limit > 0 {
		q.Set("limit", fmt.Sprint(o.Limit))
	}
	if o.Continue != "" {
		q.Set("continue", o.Continue)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// List reads one page (or all, without a limit); namespace "" lists all namespaces.
func (c *Client) List(ctx context.Context, res Resource, namespace string, opts ListOptions) (*object.List, error) {
	var l object.List
	return &l, c.Do(ctx, http.MethodGet, res.Path(namespace, "")+opts.query(), nil, "", &l)
}

// Create stores a new object.
func (c *Client) Create(ctx context.Context, res Resource, o *object.Object) (*object.Object, error) {
	body, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var out object.Object
	return &out, c.Do(ctx, http.MethodPost, res.Path(o.Metadata.Namespace, ""), body, "", &out)
}

// Update replaces an object (its status only, when status is true).
func (c *Client) Update(ctx context.Context, res Resource, o *object.Object, status bool) (*object.Object, error) {
	body, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	p := res.Path(o.Metadata.Namespace, o.Metadata.Name)
	if status {
		p += "/status"
	}
	var out object.Object
	return &out, c.Do(ctx, http.MethodPut, p, body, "", &out)
}

// Patch applies a JSON merge patch.
func (c *Client) Patch(ctx context.Context, res Resource, namespace, name string, patch []byte) (*object.Object, error) {
	var out object.Object
	return &out, c.Do(ctx, http.MethodPatch, res.Path(namespace, name), patch, "application/merge-patch+json", &out)
}

// DeleteOptions tune Delete.
type DeleteOptions struct {
	PropagationPolicy  string
	GracePeriodSeconds *int64
}

// Delete removes an object (or starts its deletion) and returns it.
func (c *Client) Delete(ctx context.Context, res Resource, namespace, name string, opts DeleteOptions) (*object.Object, error) {
	q := url.Values{}
	if opts.PropagationPolicy != "" {
		q.Set("propagationPolicy", opts.PropagationPolicy)
	}
	if opts.GracePeriodSeconds != nil {
		q.Set("gracePeriodSeconds", fmt.Sprint(*opts.GracePeriodSeconds))
	}
	p := res.Path(namespace, name)
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var out object.Object
	return &out, c.Do(ctx, http.MethodDelete, p, nil, "", &out)
}

// Event is one decoded watch event.
type Event struct {
	Type   string
	Object *object.Object
	Status *object.Status
}

// Stream opens a GET of path whose body streams (a log, a watch): the
// caller reads and closes it. A non-200 answer is a Status error.
func (c *Client) Stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the Homeostat API at %s: %w", c.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return nil, statusError(resp.StatusCode, data)
	}
	return resp.Body, nil
}

// Watch streams events until ctx ends or the server closes the stream.
// resourceVersion "" starts with the current objects.
func (c *Client) Watch(ctx context.Context, res Resource, namespace, name string, opts ListOptions, resourceVersion string) (<-chan Event, error) {
	q := url.Values{"watch": {"1"}}
	if opts.LabelSelector != "" {
		q.Set("labelSelector", opts.LabelSelector)
	}
	if opts.FieldSelector != "" {
		q.Set("fieldSelector", opts.FieldSelector)
	}
	if resourceVersion != "" {
		q.Set("resourceVersion", resourceVersion)
	}
	if opts.AllowWatchBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	body, err := c.Stream(ctx, res.Path(namespace, name)+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	ch := make(chan Event, 64)
	go func() {
		defer close(ch)
		defer body.Close()
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 0, 64*1024), 8*1024*1024)
		for sc.Scan() {
			var raw object.WatchEvent
			if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
				continue
			}
			ev := Event{Type: raw.Type}
			if raw.Type == object.Error {
				ev.Status = &object.Status{}
				_ = json.Unmarshal(raw.Object, ev.Status)
			} else {
				ev.Object = &object.Object{}
				_ = json.Unmarshal(raw.Object, ev.Object)
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
