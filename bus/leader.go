package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reads that must see every acknowledged write go to the stream's leader
// through the JetStream API ($JS.API.STREAM.MSG.GET), not through direct
// gets, which any replica may answer from behind the leader.

type storedMsg struct {
	subject string
	seq     uint64
	header  nats.Header
	data    []byte
	time    time.Time
}

// tombstone reports a delete marker: our deletes, purges, and markers the
// server leaves when a key's time to live runs out.
func (m *storedMsg) tombstone() bool { return isTombstone(m.header) }

func isTombstone(h nats.Header) bool {
	op := h.Get(kvOp)
	return op == kvDel || op == kvPurge || h.Get(jetstream.MarkerReasonHeader) != ""
}

type msgGetRequest struct {
	Seq      uint64 `json:"seq,omitempty"`
	LastFor  string `json:"last_by_subj,omitempty"`
	NextFor  string `json:"next_by_subj,omitempty"`
	NoHeader bool   `json:"no_hdr,omitempty"`
}

type msgGetResponse struct {
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs"`
		Data    []byte    `json:"data"`
		Time    time.Time `json:"time"`
	} `json:"message"`
	Error *jetstream.APIError `json:"error"`
}

// leaderGet asks the stream's leader for one message; ErrNotFound when
// there is none.
func (c *Conn) leaderGet(ctx context.Context, stream string, req msgGetRequest) (*storedMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var reply *nats.Msg
	err = retried(ctx, func(ctx context.Context) error {
		var err error
		reply, err = c.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
		return translate(err)
	})
	if err != nil {
		return nil, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("bus: get from %s: %w", stream, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, ErrNotFound
		}
		return nil, translate(resp.Error)
	}
	if resp.Message == nil {
		return nil, ErrNotFound
	}
	m := &storedMsg{subject: resp.Message.Subject, seq: resp.Message.Seq, data: resp.Message.Data, time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if m.header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("bus: get from %s: headers: %w", stream, err)
		}
	}
	return m, nil
}

// lastMsg is the latest message of a subject, tombstones included.
func (c *Conn) lastMsg(ctx context.Context, stream, subject string) (*storedMsg, error) {
	return c.leaderGet(ctx, stream, msgGetRequest{LastFor: subject})
}

// lastSeq is the stream's last sequence, as its leader knows it.
func (c *Conn) lastSeq(ctx context.Context, stream string) (uint64, error) {
	info, err := c.leaderInfo(ctx, stream, 0)
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}

// errNotLeader: a stream's information came from a replica that is not
// its leader.
var errNotLeader = fmt.Errorf("%w: a replica answered for a stream without a leader", ErrUnavailable)

// errBehind: a stream's information came from a server that took itself
// for the leader but had not stored a confirmed revision.
var errBehind = fmt.Errorf("%w: a server answered for a stream without a revision a quorum had confirmed", ErrUnavailable)

// leaderInfo is the stream's information as its leader has it. While a
// stream has no leader, any of its replicas answers STREAM.INFO from its
// own state, which may lack writes already acknowledged; such an answer
// names no leader and is refused here, and the request made again until
// a leader answers (see retried). So is one that has not reached upTo, a
// confirmed revision (0: none): it came from a leader cut off from its
// peers (see confirm.go).
func (c *Conn) leaderInfo(ctx context.Context, stream string, upTo uint64, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	var info *jetstream.StreamInfo
	err := retried(ctx, func(ctx context.Context) error {
		st, err := c.js.Stream(ctx, stream)
		if err != nil {
			return translate(err)
		}
		i := st.CachedInfo()
		if len(opts) > 0 {
			if i, err = st.Info(ctx, opts...); err != nil {
				return translate(err)
			}
		}
		if !fromLeader(i) {
			return errNotLeader
		}
		if i.State.LastSeq < upTo {
			return errBehind
		}
		info = i
		return nil
	})
	return info, err
}

// fromLeader says whether stream information was given by a leader: a
// replica of a leaderless stream names none.
func fromLeader(i *jetstream.StreamInfo) bool {
	return i.Cluster == nil || i.Cluster.Leader != ""
}

// nextAfter is the sequence of the first message matching filter after
// after, as the leader knows it; 0 when there is none.
func (c *Conn) nextAfter(ctx context.Context, stream, filter string, after uint64) (uint64, error) {
	m, err := c.leaderGet(ctx, stream, msgGetRequest{Seq: after + 1, NextFor: filter, NoHeader: true})
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.seq, nil
}

// subjects lists the subjects matching filter that hold a message (a
// value or a delete marker), as the stream's leader knows them, from an
// answer that holds the stream up to upTo at least: a leader that answers
// with less has not stored a confirmed revision (see confirm.go).
func (c *Conn) subjects(ctx context.Context, stream, filter string, upTo uint64) (map[string]uint64, error) {
	info, err := c.leaderInfo(ctx, stream, upTo, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, err
	}
	return info.State.Subjects, nil
}
