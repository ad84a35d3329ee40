package bus

import "context"

// ProvisionOptions say what Provision creates beyond what every process
// needs.
type ProvisionOptions struct {
	// Queues are the controllers' work queues.
	Queues []string
	// History bounds the reconcile history.
	History HistoryOptions
}

// Provision creates what every role of the control plane opens, beyond
// the objects' buckets (which Store creates): the leases, the retry
// records, the node pod index, the span stream, the reconcile history and
// the work queues named. The API calls it at start, since confined roles
// (controllers, the scheduler, nodes) may not create streams and wait for
// them instead.
func (c *Conn) Provision(ctx context.Context, opts ProvisionOptions) error {
	if _, err := c.Leases(ctx); err != nil {
		return err
	}
	if _, err := c.RetryRecords(ctx); err != nil {
		return err
	}
	if _, err := c.NodePods(ctx); err != nil {
		return err
	}
	if _, err := c.SpanSink(ctx); err != nil {
		return err
	}
	if _, err := c.History(ctx, opts.History); err != nil {
		return err
	}
	for _, q := range opts.Queues {
		if err := c.ensureStream(ctx, c.queueStreamConfig(q)); err != nil {
			return err
		}
	}
	return nil
}
