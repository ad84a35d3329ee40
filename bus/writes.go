package bus

import (
	"context"
	"strings"
)

// Writes counts the messages ever written to each of the bus's streams,
// named as a person reads them: a resource for an object bucket ("pods",
// "replicasets.apps"), "queue <controller>" for a work queue, and "node pod
// index", "history", "traces", "leases", "retry records" for the rest.
// Sequences only grow, so the difference of two counts is what was
// written in between, whatever was replaced or expired meanwhile.
func (c *Conn) Writes(ctx context.Context) (map[string]uint64, error) {
	out := map[string]uint64{}
	lister := c.js.ListStreams(ctx)
	for info := range lister.Info() {
		out[streamLabel(info.Config.Name)] += info.State.LastSeq
	}
	if err := lister.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

var streamLabels = map[string]string{
	nodePodsStream: "node pod index", historyStream: "history", tracesStream: "traces", auditStream: "audit",
	kvStream(leaseBucket): "leases", kvStream(retryBucket): "retry records", kvStream(metaBucket): "bookkeeping",
	kvStream(ceilingBucket): "ceiling",
}

func streamLabel(name string) string {
	switch l, ok := streamLabels[name]; {
	case ok:
		return l
	case strings.HasPrefix(name, "WQ_"):
		return "queue " + strings.TrimPrefix(name, "WQ_")
	case strings.HasPrefix(name, "KV_hs_"):
		// Bucket names lose the resource's dots; its first part is the plural.
		res := strings.TrimPrefix(name, "KV_hs_")
		if plural, group, ok := strings.Cut(res, "_"); ok {
			return plural + "." + strings.ReplaceAll(group, "_", ".")
		}
		return res
	}
	return name
}
