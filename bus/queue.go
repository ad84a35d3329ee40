package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/homeostat/homeostat/clock"
)

// A work queue is a JetStream stream with work-queue retention and one
// pending message per key (MaxMsgsPerSubject 1, older discarded), so that
// duplicates fold. Any number of workers in any number of processes pull
// from one durable consumer and split the keys; nothing is lost while no
// worker runs. Work is added by whoever sees a change (the informers of
// every process running the controller): each addition names the
// revisions that caused it, which makes its message id, so that the same
// change seen by several processes is stored once (the stream's duplicate
// window).

// headerMinRevision names a revision the worker's cache must have reached:
// "<resource>=<revision>".
const headerMinRevision = "Homeostat-Min-Revision"

// QueueSpec describes a work queue.
type QueueSpec struct {
	// Name is the queue's name ([a-z0-9-]).
	Name string
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
	log    func(msg string, args ...any)

	mu   sync.Mutex
	cons jetstream.Consumer
}

// Queue creates or opens a work queue and its shared durable consumer.
func (c *Conn) Queue(ctx context.Context, spec QueueSpec) (*Queue, error) {
	if spec.AckWait == 0 {
		spec.AckWait = 30 * time.Second
	}
	q := &Queue{conn: c, spec: spec, stream: queueStream(spec.Name), prefix: queuePrefix + spec.Name + ".", log: c.log.Warn}
	if err := c.ensureStream(ctx, c.queueStreamConfig(spec.Name)); err != nil {
		return nil, err
	}
	if _, err := q.consumer(ctx); err != nil {
		return nil, err
	}
	return q, nil
}

// queuePrefix begins the subjects of every work queue: wq.<name>.<key>.
const queuePrefix = "wq."

func (c *Conn) queueStreamConfig(name string) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              queueStream(name),
		Description:       "homeostat work queue " + name,
		Subjects:          []string{queuePrefix + name + ".>"},
		Retention:         jetstream.WorkQueuePolicy,
		MaxMsgsPerSubject: 1,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
		Replicas:          c.replicas,
		Duplicates:        2 * time.Minute,
	}
}

// consumer returns the durable consumer, creating it when it is not there
// (first use, or deleted behind our back).
func (q *Queue) consumer(ctx context.Context) (jetstream.Consumer, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cons != nil {
		return q.cons, nil
	}
	var cons jetstream.Consumer
	err := q.conn.UntilAvailable(ctx, "queue "+q.spec.Name, func(ctx context.Context) error {
		var err error
		// Pulled on the reads' connection, for the reason reads are
		// (Conn); acknowledgements are requests on the other.
		cons, err = q.conn.rjs.CreateOrUpdateConsumer(ctx, q.stream, jetstream.ConsumerConfig{
			Durable:       "workers",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       q.spec.AckWait,
			MaxDeliver:    -1,
			MaxAckPending: -1,
		})
		if err != nil {
			return fmt.Errorf("bus: queue %s consumer: %w", q.spec.Name, translate(err))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	q.cons = cons
	return cons, nil
}

func (q *Queue) forgetConsumer() {
	q.mu.Lock()
	q.cons = nil
	q.mu.Unlock()
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.spec.Name }

// Work is one key to add to a queue.
type Work struct {
	Key string
	// MinRevisions are revisions (by resource) the worker's caches must
	// reach before acting: what caused the work. They also identify it:
	// the same key with the same revisions is stored once.
	MinRevisions map[string]uint64
	// Trace continues the trace of the change that caused the work.
	Trace trace.SpanContext
}

func (q *Queue) message(w Work) *nats.Msg {
	hdr := nats.Header{}
	res := make([]string, 0, len(w.MinRevisions))
	for r := range w.MinRevisions {
		res = append(res, r)
	}
	slices.Sort(res)
	id := w.Key
	for _, r := range res {
		v := r + "=" + strconv.FormatUint(w.MinRevisions[r], 10)
		hdr.Add(headerMinRevision, v)
		id += "|" + v
	}
	if len(res) > 0 {
		hdr.Set(jetstream.MsgIDHeader, id)
	}
	injectSpan(w.Trace, hdr)
	return &nats.Msg{Subject: q.prefix + w.Key, Header: hdr}
}

// Add adds keys and waits until the queue has them.
func (q *Queue) Add(ctx context.Context, work ...Work) error {
	futures := make([]jetstream.PubAckFuture, 0, len(work))
	for _, w := range work {
		if !validKey(w.Key) {
			return fmt.Errorf("%w: %q is not a valid key", ErrInvalid, w.Key)
		}
		f, err := q.conn.js.PublishMsgAsync(q.message(w), jetstream.WithStallWait(tryTimeout))
		if err != nil {
			return fmt.Errorf("bus: enqueue %s: %w", w.Key, translate(err))
		}
		futures = append(futures, f)
	}
	return waitAcks(ctx, futures)
}

// jsErrDuplicateInProcess: a message with the same id is being stored.
const jsErrDuplicateInProcess = 10158

// waitAcks waits for asynchronous publishes, for at most requestTimeout,
// and gives up sooner when no acknowledgement has come for tryTimeout: an
// acknowledgement lost with a stream's leader never comes, and the
// caller's retry should reach the next leader as soon as it is elected,
// not seconds later. A message whose id another publisher is storing at
// the same moment counts as stored.
func waitAcks(ctx context.Context, futures []jetstream.PubAckFuture) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	stalled := time.NewTimer(tryTimeout)
	defer stalled.Stop()
	for _, f := range futures {
		select {
		case ack := <-f.Ok():
			wroteAck(ack)
		case err := <-f.Err():
			var apiErr *jetstream.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrDuplicateInProcess {
				return fmt.Errorf("bus: publish %s: %w", f.Msg().Subject, translate(err))
			}
			// The same message, stored by another publisher.
		case <-stalled.C:
			return fmt.Errorf("bus: publish %s: %w: no acknowledgement for %s", f.Msg().Subject, ErrUnavailable, tryTimeout)
		case <-ctx.Done():
			return fmt.Errorf("bus: publish %s: %w", f.Msg().Subject, translate(ctx.Err()))
		}
		stalled.Reset(tryTimeout)
	}
	return nil
}

// Depth is the number of keys waiting plus those being worked on or backed off.
func (q *Queue) Depth(ctx context.Context) (pending, inFlight uint64, err error) {
	cons, err := q.consumer(ctx)
	if err != nil {
		return 0, 0, err
	}
	info, err := cons.Info(ctx)
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
	// MinRevisions are resource revisions the worker's caches must reach
	// before acting.
	MinRevisions map[string]uint64
	// Trace is the trace context of whoever added the key.
	Trace trace.SpanContext
	msg   jetstream.Msg
	q     *Queue
}

// Context returns ctx carrying the trace context of whoever enqueued the key.
func (d *Delivery) Context(ctx context.Context) context.Context { return WithSpan(ctx, d.Trace) }

// Ack marks the key done, once the queue confirms it (see confirm).
func (d *Delivery) Ack(ctx context.Context) error { return d.confirm(ctx, []byte("+ACK")) }

// Retry hands the key back to be redelivered after delay, once the queue
// confirms it (see confirm).
func (d *Delivery) Retry(ctx context.Context, delay time.Duration) error {
	return d.confirm(ctx, fmt.Appendf(nil, "-NAK {\"delay\": %d}", delay.Nanoseconds()))
}

// confirm sends an acknowledgement and waits for the queue's consumer
// leader to confirm it, sending again until one does, for at most the
// claim's AckWait (after which the key is redelivered anyway). A
// fire-and-forget acknowledgement sent to a leader that just died is lost,
// and the key would wait out AckWait however soon another leader took over.
// Sending one twice is harmless: the second finds nothing pending.
func (d *Delivery) confirm(ctx context.Context, body []byte) error {
	reply, err := d.reply()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.q.spec.AckWait)
	defer cancel()
	pace := clock.Pace{First: 50 * time.Millisecond, Max: retryMax}
	for {
		// The confirmation takes a replication round; a second without it
		// means the leader is gone or not yet caught up.
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		_, err := d.q.conn.nc.RequestWithContext(rctx, reply, body)
		rcancel()
		if err == nil {
			return nil
		}
		if !pace.Wait(ctx) {
			return wrap(ErrUnavailable, err)
		}
	}
}

// InProgress extends the worker's claim by another AckWait. It goes out on
// the writes' connection, as Ack and Retry do: on the reads' one, where
// the delivery came, it could arrive after a Retry sent since, and undo
// the Retry's delay (the server dates a claim from its last extension).
func (d *Delivery) InProgress() error {
	reply, err := d.reply()
	if err != nil {
		return err
	}
	return translate(d.q.conn.nc.Publish(reply, []byte("+WPI")))
}

// reply is where the delivery's consumer takes its acknowledgements.
func (d *Delivery) reply() (string, error) {
	if r := d.msg.Reply(); r != "" {
		return r, nil
	}
	return "", fmt.Errorf("bus: delivery of %s cannot be acknowledged", d.Key)
}

func (q *Queue) delivery(m jetstream.Msg) *Delivery {
	hdr := m.Headers()
	d := &Delivery{Key: strings.TrimPrefix(m.Subject(), q.prefix), msg: m, q: q, Attempt: 1,
		Trace: extractSpan(hdr), MinRevisions: map[string]uint64{}}
	if md, err := m.Metadata(); err == nil {
		d.Attempt = md.NumDelivered
	}
	for _, v := range hdr.Values(headerMinRevision) {
		if r, rev, ok := strings.Cut(v, "="); ok {
			if n, err := strconv.ParseUint(rev, 10, 64); err == nil && n > d.MinRevisions[r] {
				d.MinRevisions[r] = n
			}
		}
	}
	return d
}

// Consume hands keys to handle, at most workers at a time, until ctx ends.
// A failure to pull (the bus lost a node, the consumer moved or vanished)
// is not the end: it pulls again, recreating the consumer when needed.
// When ctx ends it stops pulling and waits for the handlers in flight,
// which should finish their work (drain) with a context of their own.
func (q *Queue) Consume(ctx context.Context, workers int, handle func(*Delivery)) error {
	workers = max(workers, 1)
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	pace := clock.Pace{First: 100 * time.Millisecond, Max: retryMax}
	for ctx.Err() == nil {
		start := time.Now()
		err := q.consumeOnce(ctx, workers, sem, &wg, handle)
		if ctx.Err() != nil {
			break
		}
		consumeRestarts.WithLabelValues(q.spec.Name).Inc()
		q.log("work queue consumption failed; pulling again", "queue", q.spec.Name, "err", err)
		if errors.Is(err, ErrNotFound) {
			q.forgetConsumer()
		}
		// A pull that lasted (its heartbeats stopped: the consumer's
		// leader died) has waited long enough; pull again at once, to
		// reach the next leader as soon as it is elected.
		if time.Since(start) >= 2*queueHeartbeat {
			pace.Reset()
			continue
		}
		if !pace.Wait(ctx) {
			break
		}
	}
	return nil
}

// queueHeartbeat is how often an idle pull hears from the consumer's
// leader (NATS allows no less); two missed make the pull start again.
const queueHeartbeat = 500 * time.Millisecond

func (q *Queue) consumeOnce(ctx context.Context, workers int, sem chan struct{}, wg *sync.WaitGroup, handle func(*Delivery)) error {
	cons, err := q.consumer(ctx)
	if err != nil {
		return err
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(workers), jetstream.PullExpiry(5*time.Second),
		jetstream.PullHeartbeat(queueHeartbeat))
	if err != nil {
		return translate(err)
	}
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	defer msgs.Stop()
	for {
		m, err := msgs.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return translate(err)
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

// MeasureWriteCeiling publishes n messages of payload to distinct keys of
// a scratch bucket, each with a revision check as every object write has,
// and returns the acknowledged rate per second: the store's write ceiling
// on this machine.
func (c *Conn) MeasureWriteCeiling(ctx context.Context, n int, payload []byte) (float64, error) {
	if _, err := c.ensureBucket(ctx, bucketSpec{name: ceilingBucket, description: "homeostat write ceiling"}); err != nil {
		return 0, err
	}
	prefix := kvPrefix(ceilingBucket) + strconv.FormatInt(time.Now().UnixNano(), 36) + "."
	start := time.Now()
	futures := make([]jetstream.PubAckFuture, 0, n)
	for i := range n {
		// It floods on purpose: a full window of publishes waits for
		// room, as long as a request may.
		f, err := c.js.PublishMsgAsync(&nats.Msg{Subject: prefix + strconv.Itoa(i), Data: payload},
			jetstream.WithExpectLastSequencePerSubject(0), jetstream.WithStallWait(requestTimeout))
		if err != nil {
			return 0, translate(err)
		}
		futures = append(futures, f)
	}
	if err := waitAcks(ctx, futures); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// QueueEntry is what a work queue holds for one key.
type QueueEntry struct {
	// Since is when the key's message was stored: when it was queued.
	Since time.Time
	// Delivered: a worker has had it at least once, so it is being
	// worked on or was handed back to wait out a backoff.
	Delivered bool
}

// QueueEntry reports what the work queue of a controller holds for key,
// or nil when it holds nothing (the key is idle). It reads and creates
// nothing: a queue that does not exist holds nothing.
func (c *Conn) QueueEntry(ctx context.Context, queue, key string) (*QueueEntry, error) {
	if !validKey(key) {
		return nil, nil
	}
	m, err := c.lastMsg(ctx, queueStream(queue), queuePrefix+queue+"."+key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e := &QueueEntry{Since: m.time}
	ctx, cancel := bounded(ctx)
	defer cancel()
	cons, err := c.js.Consumer(ctx, queueStream(queue), "workers")
	if err != nil {
		return nil, translate(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, translate(err)
	}
	e.Delivered = info.Delivered.Stream >= m.seq
	return e, nil
}
