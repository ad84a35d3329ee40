package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/homeostat/homeostat/kinds"
	"github.com/homeostat/homeostat/object"
)

// podLog proxies a container's log from the agent of the pod's node:
// GET .../pods/{name}/log?container=&follow=true&previous=true&tailLines=N
// &timestamps=true&sinceSeconds=N&sinceTime=T&limitBytes=N.
func (s *Service) podLog(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	p, e := podOf(r, ref)
	if e != nil {
		return e
	}
	if p.Spec.NodeName == "" {
		return badRequest("pod %q has not been scheduled to a node yet", ref.name)
	}
	q := r.URL.Query()
	limit, e := logLimit(q)
	if e != nil {
		return e
	}
	container := q.Get("container")
	if container == "" && len(p.Spec.Containers) > 1 {
		names := make([]string, 0, len(p.Spec.Containers))
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name)
		}
		return badRequest("pod %q has several containers; choose one of [%s] with container=", ref.name, strings.Join(names, " "))
	}
	fwd := url.Values{}
	for _, k := range []string{"container", "follow", "previous", "tailLines", "timestamps", "sinceSeconds", "sinceTime"} {
		if v := q.Get(k); v != "" {
			fwd.Set(k, v)
		}
	}
	resp, e := s.agentLog(r.Context(), p, fwd)
	if e != nil {
		return e
	}
	defer resp.Body.Close()
	streamLogTo(w, resp.Body, limit)
	return nil
}

// agentLog asks the agent of a bound pod's node for its log, with the
// agent's own options (container, previous, tailLines, …); the caller
// closes the answer's body.
func (s *Service) agentLog(ctx context.Context, p *kinds.Pod, fwd url.Values) (*http.Response, *apiError) {
	nodes, err := s.storeFor(ctx, s.reg.MustLookup("", "nodes"))
	if err != nil {
		return nil, newError(http.StatusServiceUnavailable, object.ReasonServiceUnavailable, "%v", err)
	}
	name := p.Metadata.Name
	node, err := nodes.Get(ctx, p.Spec.NodeName)
	if err != nil {
		return nil, newError(http.StatusServiceUnavailable, object.ReasonServiceUnavailable, "node %q of pod %q is not registered", p.Spec.NodeName, name)
	}
	var st kinds.NodeStatus
	_ = node.DecodeStatus(&st)
	if st.DaemonEndpoints == nil || st.DaemonEndpoints.AgentURL == "" {
		return nil, newError(http.StatusServiceUnavailable, object.ReasonServiceUnavailable, "the agent of node %q serves no logs", p.Spec.NodeName)
	}
	target := strings.TrimSuffix(st.DaemonEndpoints.AgentURL, "/") + "/logs/" + url.PathEscape(p.Metadata.Namespace) + "/" + url.PathEscape(name) + "?" + fwd.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "%v", err)
	}
	resp, err := s.agents.Do(req)
	if err != nil {
		return nil, newError(http.StatusServiceUnavailable, object.ReasonServiceUnavailable, "the agent of node %q did not answer: %v", p.Spec.NodeName, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		reason := object.ReasonInternalError
		switch {
		case resp.StatusCode == http.StatusNotFound:
			reason = object.ReasonNotFound
		case resp.StatusCode < 500:
			reason = object.ReasonBadRequest
		}
		return nil, newError(resp.StatusCode, reason, "%s", strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// streamLogTo copies a log to the client as it comes, flushing each part,
// up to limit bytes when limit > 0.
func streamLogTo(w http.ResponseWriter, log io.Reader, limit int64) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32*1024)
	if limit > 0 {
		log = io.LimitReader(log, limit)
	}
	for {
		n, err := log.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// logLimit checks the options and reads limitBytes, which the API applies;
// the agent applies the others.
func logLimit(q url.Values) (int64, *apiError) {
	for _, k := range []string{"tailLines", "limitBytes", "sinceSeconds"} {
		if v := q.Get(k); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || (n == 0 && k != "tailLines") {
				return 0, badRequest("%s=%q must be a positive integer", k, v)
			}
		}
	}
	if v := q.Get("sinceTime"); v != "" {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return 0, badRequest("sinceTime=%q must be an RFC 3339 time", v)
		}
	}
	limit, _ := strconv.ParseInt(q.Get("limitBytes"), 10, 64)
	return limit, nil
}

// podOf reads the pod a pod subresource is of.
func podOf(r *http.Request, ref *resourceRef) (*kinds.Pod, *apiError) {
	o, err := ref.store.Get(r.Context(), ref.key())
	if err != nil {
		return nil, storeError(ref, ref.name, err)
	}
	p, derr := kinds.DecodePod(o)
	if derr != nil {
		return nil, newError(http.StatusInternalServerError, object.ReasonInternalError, "decoding the pod: %v", derr)
	}
	return p, nil
}
