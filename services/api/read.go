package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/homeostat/homeostat/bus"
	"github.com/homeostat/homeostat/object"
	"github.com/homeostat/homeostat/reconcile"
	"github.com/homeostat/homeostat/table"
)

func (s *Service) get(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	tr, e := asTable(r)
	if e != nil {
		return e
	}
	// As Kubernetes reads: "0" takes any version (the leader's answer);
	// none, or N (not older than N), the latest, which a confirmation
	// proves.
	rv := r.URL.Query().Get("resourceVersion")
	if _, err := bus.Revision(rv); err != nil {
		return badRequest("%v", err)
	}
	get := ref.store.GetConfirmed
	if rv == "0" {
		get = ref.store.Get
	}
	o, err := get(r.Context(), ref.key())
	if err != nil {
		return storeError(ref, ref.name, err)
	}
	if tr != nil {
		return writeTable(w, ref, tr, []*object.Object{o}, object.ListMeta{ResourceVersion: o.Metadata.ResourceVersion})
	}
	writeObject(w, r, http.StatusOK, o)
	return nil
}

// raw serves the stored bytes of a key as they are, valid object or not:
// how to look at a value that GET refuses as corrupt.
func (s *Service) raw(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	data, rev, err := ref.store.Raw(r.Context(), ref.key())
	if err != nil {
		return storeError(ref, ref.name, err)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Resource-Version", strconv.FormatUint(rev, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	return nil
}

// filters are the label and field selectors of a list or watch.
type filters struct {
	labels object.Selector
	fields []fieldReq
}

type fieldReq struct {
	path []string
	val  string
	neg  bool
}

func parseFilters(r *http.Request, ref *resourceRef) (filters, *apiError) {
	q := r.URL.Query()
	var f filters
	sel, err := object.ParseSelector(q.Get("labelSelector"))
	if err != nil {
		return f, badRequest("labelSelector: %v", err)
	}
	f.labels = sel
	for _, part := range strings.Split(q.Get("fieldSelector"), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		req := fieldReq{}
		k, v, ok := strings.Cut(part, "!=")
		if ok {
			req.neg = true
		} else if k, v, ok = strings.Cut(part, "=="); !ok {
			if k, v, ok = strings.Cut(part, "="); !ok {
				return f, badRequest("fieldSelector %q: expected field=value or field!=value", part)
			}
		}
		label := strings.TrimSpace(k)
		path, ok := fieldPath(ref.res, label)
		if !ok {
			return f, badRequest("field label not supported: %s (%s may be selected by %s)", label, ref.groupResource(),
				strings.Join(slices.Sorted(maps.Keys(selectableFields(ref.res))), ", "))
		}
		req.path, req.val = path, strings.TrimSpace(v)
		f.fields = append(f.fields, req)
	}
	return f, nil
}

func (f filters) match(o *object.Object) bool {
	if !f.labels.Matches(o.Metadata.Labels) {
		return false
	}
	if len(f.fields) == 0 {
		return true
	}
	b, _ := json.Marshal(o)
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	for _, req := range f.fields {
		var cur any = doc
		for _, p := range req.path {
			m, _ := cur.(map[string]any)
			cur = m[p]
		}
		got := ""
		if cur != nil {
			got = fmt.Sprint(cur)
		}
		if (got == req.val) == req.neg {
			return false
		}
	}
	return true
}

func (s *Service) list(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	f, e := parseFilters(r, ref)
	if e != nil {
		return e
	}
	tr, e := asTable(r)
	if e != nil {
		return e
	}
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return badRequest("limit=%q must be a non-negative integer", v)
		}
		limit = n
	}
	if limit > s.limits.MaxListPage {
		limit = s.limits.MaxListPage
	}
	// Shared: the items are only read here, so unchanged objects come from
	// the store's list cache, decoded and encoded once per revision.
	opts := bus.ListOptions{Namespace: ref.namespace, Selector: f.labels, Limit: limit, Continue: q.Get("continue"), Shared: true}
	if len(f.fields) > 0 {
		// Field selection happens here, so paging must too.
		opts.Selector, opts.Limit = object.Selector{}, 0
	}
	res, cached, err := s.lists.list(r.Context(), ref, opts)
	source := "cache"
	if err == nil && !cached {
		source = "store"
		res, err = ref.store.List(r.Context(), opts)
	}
	if err != nil {
		return storeError(ref, "", err)
	}
	listsServed.WithLabelValues(ref.groupResource(), source).Inc()
	s.reportCorrupt(w, r, ref, res.Corrupt)
	items, encoded := res.Items, res.JSON
	if len(f.fields) > 0 {
		items, encoded = nil, nil
		for i, o := range res.Items {
			if !f.match(o) {
				continue
			}
			items = append(items, o)
			if res.JSON != nil {
				encoded = append(encoded, res.JSON[i])
			}
		}
	}
	if items == nil {
		items = []*object.Object{}
	}
	out := object.List{
		APIVersion: ref.res.APIVersion(), Kind: ref.res.Kind + "List",
		Metadata: object.ListMeta{ResourceVersion: strconv.FormatUint(res.Revision, 10), Continue: res.Continue},
		Items:    items,
	}
	if res.Continue != "" {
		out.Metadata.RemainingItemCount = &res.Remaining
	}
	if tr != nil {
		return writeTable(w, ref, tr, items, out.Metadata)
	}
	if responseType(r) == mediaJSON && len(encoded) == len(items) {
		writeListJSON(w, out, encoded)
		return nil
	}
	writeObject(w, r, http.StatusOK, out)
	return nil
}

// reportCorrupt tells the client, in Warning headers as Kubernetes does,
// which keys a list left out because their values are not valid objects,
// and records a Warning event on each.
func (s *Service) reportCorrupt(w http.ResponseWriter, r *http.Request, ref *resourceRef, bad []*bus.CorruptError) {
	k := reconcile.KindOf(ref.res)
	for _, ce := range bad {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", ce.Error()+"; left out of the list"))
		s.events.CorruptObject(r.Context(), k, ce.Key, ce)
	}
}

// watch streams newline-delimited events. resourceVersion "" or "0" starts
// with the current objects as ADDED; N resumes with changes after N, or
// answers 410 Gone when deletes after N have been compacted away.
func (s *Service) watch(w http.ResponseWriter, r *http.Request, ref *resourceRef) *apiError {
	f, e := parseFilters(r, ref)
	if e != nil {
		return e
	}
	q := r.URL.Query()
	after, err := bus.Revision(q.Get("resourceVersion"))
	if err != nil {
		return badRequest("%v", err)
	}
	ctx := r.Context()
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return badRequest("timeoutSeconds=%q must be a non-negative integer", v)
		}
		if n > 0 {
			var cancel func()
			ctx, cancel = context.WithTimeout(ctx, time.Duration(n)*time.Second)
			defer cancel()
		}
	}
	// A small buffer: the stream's consumer (or the store's shared read,
	// for a watch that resumes) holds what the client has not read yet,
	// so a deep channel per watch would only cost memory.
	// Shared: events are only read here, so each change is decoded and
	// encoded once for every watch of the kind, not once per watch, and a
	// watch that resumes shares one read of the store with the others.
	opts := bus.WatchOptions{Namespace: ref.namespace, AfterRevision: after, Buffer: watchBuffer, Shared: true}
	if ref.name != "" {
		opts.Key = ref.key()
	}
	ch, err := ref.store.Watch(ctx, opts)
	if err != nil {
		return storeError(ref, ref.name, err)
	}
	tr, e := asTable(r)
	if e != nil {
		return e
	}
	st := &watchStream{ref: ref, f: f, resumed: after > 0, bookmarks: q.Get("allowWatchBookmarks") == "true",
		sent: map[string]bool{}, rev: after, table: tr}
	st.serve(w, ch)
	return nil
}

// watchBuffer is the channel capacity of a watch served to a client.
const watchBuffer = 16

// watchStream writes one watch's events as newline-delimited JSON.
type watchStream struct {
	ref       *resourceRef
	f         filters
	resumed   bool
	bookmarks bool
	// sent tracks the keys the client holds: objects that stop matching
	// the selector are reported as DELETED, as Kubernetes does, so the
	// client's view of the selection stays right.
	sent map[string]bool
	rev  uint64 // the last revision the client has been told of
	told bool   // the initial events are over
	// table, when set, sends each object as a one-row Table (kubectl get -w).
	table *tableRequest
}

func (st *watchStream) serve(w http.ResponseWriter, ch <-chan bus.Event) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	var frame []byte
	unflushed := false
	for ev := range ch {
		if typ, obj := st.event(ev); typ != "" {
			frame = st.frame(frame[:0], typ, obj, ev)
			if _, err := w.Write(frame); err != nil {
				return
			}
			unflushed = true
		}
		// Flush once the events at hand are written, not after each: an
		// initial state of many objects goes out in few writes.
		if unflushed && flusher != nil && len(ch) == 0 {
			flusher.Flush()
			unflushed = false
		}
	}
}

// frame appends one watch event as a line of JSON to buf. An object the
// store has already encoded (a shared watch's, unchanged here) is written
// as it is.
func (st *watchStream) frame(buf []byte, typ string, obj any, ev bus.Event) []byte {
	var raw []byte
	if o, ok := obj.(*object.Object); ok && o == ev.Object && st.table == nil {
		raw = ev.JSON() // encoded on first need: a Table watch never asks
	}
	if raw == nil {
		raw, _ = json.Marshal(st.render(typ, obj))
	}
	name, _ := json.Marshal(typ)
	buf = append(buf, `{"type":`...)
	buf = append(buf, name...)
	buf = append(buf, `,"object":`...)
	buf = append(buf, raw...)
	return append(buf, "}\n"...)
}

// render turns an event's object into a one-row Table when the client
// asked for tables; bookmarks and errors go as they are.
func (st *watchStream) render(typ string, obj any) any {
	o, ok := obj.(*object.Object)
	if st.table == nil || !ok || typ == object.Bookmark {
		return obj
	}
	t, err := table.New(columnsOf(st.ref.res), []*object.Object{o}, table.Options{Include: st.table.include, ResourceVersion: o.Metadata.ResourceVersion})
	if err != nil {
		return obj
	}
	return t
}

// event maps a store event to what the client sees, if anything.
func (st *watchStream) event(ev bus.Event) (string, any) {
	st.rev = max(st.rev, ev.Revision)
	switch ev.Type {
	case bus.Synced:
		// Caught up: with bookmarks asked for, say so and where, as
		// Kubernetes does (marking the end of the initial events once).
		if !st.bookmarks {
			return "", nil
		}
		md := object.Meta{ResourceVersion: strconv.FormatUint(st.rev, 10)}
		if !st.resumed && !st.told {
			md.Annotations = map[string]string{"k8s.io/initial-events-end": "true"}
		}
		st.told = true
		return object.Bookmark, &object.Object{APIVersion: st.ref.res.APIVersion(), Kind: st.ref.res.Kind, Metadata: md}
	case bus.Corrupt:
		// Left out, as if deleted: the client must not keep what it had.
		ev = bus.Event{Type: bus.Deleted, Key: ev.Key, Revision: ev.Revision, Object: stubOf(st.ref, ev)}
	}
	return watchEvent(ev, st.f, st.sent, st.resumed)
}

// watchEvent maps a store event to what the client sees. sent tracks the
// keys the client holds; a resumed watch cannot know them, so it passes
// deletes through and reports objects leaving the selection as deleted.
func watchEvent(ev bus.Event, f filters, sent map[string]bool, resumed bool) (string, any) {
	switch ev.Type {
	case bus.Failed:
		st := object.Status{APIVersion: "v1", Kind: "Status", Status: "Failure", Code: http.StatusInternalServerError,
			Reason: object.ReasonInternalError, Message: fmt.Sprint(ev.Err)}
		return object.Error, st
	case bus.Synced:
		return "", nil

	case bus.Deleted:
		known := sent[ev.Key] || resumed
		delete(sent, ev.Key)
		if !known || ev.Object == nil {
			return "", nil
		}
		return object.Deleted, ev.Object
	}
	if !f.match(ev.Object) {
		if sent[ev.Key] || (resumed && ev.Type == bus.Modified) {
			delete(sent, ev.Key)
			return object.Deleted, ev.Object
		}
		return "", nil
	}
	typ := object.Added
	if sent[ev.Key] || (resumed && ev.Type == bus.Modified) {
		typ = object.Modified
	}
	sent[ev.Key] = true
	return typ, ev.Object
}

// stubOf names the object of an event whose value cannot be read.
func stubOf(ref *resourceRef, ev bus.Event) *object.Object {
	ns, name := object.SplitKey(ev.Key, ref.res.Namespaced)
	return &object.Object{APIVersion: ref.res.APIVersion(), Kind: ref.res.Kind,
		Metadata: object.Meta{Name: name, Namespace: ns, ResourceVersion: strconv.FormatUint(ev.Revision, 10)}}
}
