package bus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// A work queue is a JetStream stream with work-queue retention and one
// pending message per key (MaxMsgsPerSubject 1, older discarded), so that
// duplicates fold. It may source kinds' buckets server-side, with a subject
// transform from $KV.<bucket>.<key> to wq.<queue>.<key>: every write becomes
// work with no dual write, and nothing is lost while no worker runs. Keys
// can also be enqueued directly. Any number of workers in any number of
// processes pull from one durable consumer and split the keys.

// HeaderMinRevision on a direct enqueue names a bucket revision the worker's
// cache must have reached: "<bucket>=<revision>".
const HeaderMinRevision = "Homeostat-Min-Revision"

// headerStreamSource is set by the server on sourced messages.
const headerStreamSource = "Nats-Stream-Source"

// QueueSpec describes a work queue.
type QueueSpec struct {
	// Name is the queue's name ([a-z0-9-]).
	Name string
	// Sources are buckets whose every write enqueues the written key.
	Sources []string
	// AckWait is how long a worker may hold a key before it is redelivered
	// to another; workers extend it while they work. Default 30s.
	AckWait time.Duration
}

// Queue is a durable work queue.
type Queue struct {
	conn   *Conn
	spec   QueueSpec
	stream string
	prefix string
	cons   jetstream.Consumer
}

// Queue creates or opens a work queue and its shared durable consumer.
func (c *Conn) Queue(ctx context.Context, spec QueueSpec) (*Queue, error) {
	if spec.AckWait == 0 {
		spec.AckWait = 30 * time.Second
	}
	q := &Queue{conn: c, spec: spec, stream: "WQ_" + spec.Name, prefix: "wq." + spec.Name + "."}
	cfg := jetstream.StreamConfig{
		Name:              q.stream,
		Description:       "homeostat work queue " + spec.Name,
		Subjects:          []string{q.prefix + ">"},
		Retention:         jetstream.WorkQueuePolicy,
		MaxMsgsPerSubject: 1,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
		Replicas:          c.replicas,
	}
	for _, b := range spec.Sources {
		cfg.Sources = append(cfg.Sources, &jetstream.StreamSource{
			Name: "KV_" + b,
			SubjectTransforms: []jetstream.SubjectTransformConfig{{
				Source: "$KV." + b + ".>", Destination: q.prefix + ">",
			}},
		})
	}
	if err := c.ensureStream(ctx, cfg); err != nil {
		return nil, err
	}
	cons, err := c.JS.CreateOrUpdateConsumer(ctx, q.stream, jetstream.ConsumerConfig{
		Durable:       "workers",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       spec.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: queue %s consumer: %w", spec.Name, err)
	}
	q.cons = cons
	return q, nil
}

// ensureStream creates a stream or brings an existing one to the
// configuration, refusing a change of retention or storage.
func (c *Conn) ensureStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	_, err := c.JS.CreateStream(ctx, cfg)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("bus: create stream %s: %w", cfg.Name, err)
	}
	st, err := c.JS.Stream(ctx, cfg.Name)
	if err != nil {
		return fmt.Errorf("bus: open stream %s: %w", cfg.Name, err)
	}
	have := st.CachedInfo().Config
	if have.Retention != cfg.Retention || have.Storage != cfg.Storage || have.Replicas != cfg.Replicas {
		return fmt.Errorf("%w: stream %s exists with retention %s, storage %s, replicas %d (want %s, %s, %d)",
			ErrIncompatible, cfg.Name, have.Retention, have.Storage, have.Replicas, cfg.Retention, cfg.Storage, cfg.Replicas)
	}
	if reflect.DeepEqual(have.Sources, cfg.Sources) && reflect.DeepEqual(have.Subjects, cfg.Subjects) {
		return nil
	}
	if _, err := c.JS.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("bus: update stream %s: %w", cfg.Name, err)
	}
	return nil
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.spec.Name }

// EnqueueMsg builds the message that enqueues key, carrying the trace
// context of ctx and the revisions the worker must have seen.
func (q *Queue) EnqueueMsg(ctx context.Context, key string, minRevs map[string]uint64) *nats.Msg {
	hdr := nats.Header{}
	for b, r := range minRevs {
		hdr.Add(HeaderMinRevision, b+"="+strconv.FormatUint(r, 10))
	}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(hdr))
	return &nats.Msg{Subject: q.prefix + key, Header: hdr}
}

// Enqueue adds keys directly and waits until the queue has them.
func (q *Queue) Enqueue(ctx context.Context, msgs ...*nats.Msg) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		f, err := q.conn.JS.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("bus: enqueue %s: %w", m.Subject, translate(err))
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("bus: enqueue %s: %w", f.Msg().Subject, translate(err))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Depth is the number of keys waiting plus those being worked on or backed off.
func (q *Queue) Depth(ctx context.Context) (pending, inFlight uint64, err error) {
	info, err := q.cons.Info(ctx)
	if err != nil {
		return 0, 0, translate(err)
	}
	return info.NumPending, uint64(info.NumAckPending), nil
}

// Delivery is one key handed to a worker.
type Delivery struct {
	Key string
	// Attempt counts deliveries of this message, from 1; a new write of the
	// key replaces the message and starts again at 1.
	Attempt uint64
	// MinRevisions are bucket revisions the worker's caches must reach
	// before acting: the write that enqueued the key, or what a direct
	// enqueue named.
	MinRevisions map[string]uint64
	Header       nats.Header
	msg          jetstream.Msg
}

// Context returns ctx carrying the trace context of whoever enqueued the key.
func (d *Delivery) Context(ctx context.Context) context.Context {
	return otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(d.Header))
}

// Ack marks the key done.
func (d *Delivery) Ack() error { return translate(d.msg.Ack()) }

// Retry hands the key back to be redelivered after delay.
func (d *Delivery) Retry(delay time.Duration) error { return translate(d.msg.NakWithDelay(delay)) }

// InProgress extends the worker's claim by another AckWait.
func (d *Delivery) InProgress() error { return translate(d.msg.InProgress()) }

func (q *Queue) delivery(m jetstream.Msg) *Delivery {
	d := &Delivery{Key: strings.TrimPrefix(m.Subject(), q.prefix), Header: m.Headers(), msg: m, Attempt: 1}
	if md, err := m.Metadata(); err == nil {
		d.Attempt = md.NumDelivered
	}
	d.MinRevisions = map[string]uint64{}
	// Nats-Stream-Source: "<stream> <seq> <filter> <transform> <subject> …"
	if src := d.Header.Get(headerStreamSource); src != "" {
		f := strings.Fields(src)
		if len(f) >= 2 && strings.HasPrefix(f[0], "KV_") {
			if rev, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				d.MinRevisions[f[0][3:]] = rev
			}
		}
	}
	for _, v := range d.Header.Values(HeaderMinRevision) {
		if b, r, ok := strings.Cut(v, "="); ok {
			if rev, err := strconv.ParseUint(r, 10, 64); err == nil && rev > d.MinRevisions[b] {
				d.MinRevisions[b] = rev
			}
		}
	}
	return d
}

// Consume hands keys to handle, at most workers at a time, until ctx ends.
// Then it stops pulling and waits for the handlers in flight, which should
// finish their work (drain) with a context of their own.
func (q *Queue) Consume(ctx context.Context, workers int, handle func(*Delivery)) error {
	if workers < 1 {
		workers = 1
	}
	msgs, err := q.cons.Messages(jetstream.PullMaxMessages(workers), jetstream.PullExpiry(5*time.Second))
	if err != nil {
		return fmt.Errorf("bus: consume %s: %w", q.spec.Name, translate(err))
	}
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		m, err := msgs.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("bus: consume %s: %w", q.spec.Name, translate(err))
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			// Not started: hand it straight back for another worker.
			_ = m.Nak()
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			handle(q.delivery(m))
		}()
	}
}

// PublishBurst publishes n async messages of payload to distinct subjects
// prefix<i>, each with a revision check, and returns the acknowledged rate
// per second: the store's write ceiling on this machine.
func (c *Conn) PublishBurst(ctx context.Context, prefix string, n int, payload []byte) (float64, error) {
	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, n)
	for i := range n {
		f, err := c.JS.PublishMsgAsync(&nats.Msg{Subject: prefix + strconv.Itoa(i), Data: payload},
			jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			return 0, translate(err)
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return 0, translate(err)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
