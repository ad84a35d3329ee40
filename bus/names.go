package bus

import "strings"

// Bucket and stream names are the bus's own business: callers name a
// resource the way Kubernetes does ("pods", "replicasets.apps",
// "widgets.example.com") and the bus maps it to its bucket.

// bucketName is hs_<plural> for the core group and hs_<plural>_<group>
// (dots as underscores) for the others.
func bucketName(resource string) string {
	return "hs_" + strings.ReplaceAll(resource, ".", "_")
}

func kvStream(bucket string) string  { return "KV_" + bucket }
func kvPrefix(bucket string) string  { return "$KV." + bucket + "." }
func queueStream(name string) string { return "WQ_" + name }

// Buckets and streams of the bus's own bookkeeping.
const (
	metaBucket    = "hs_meta"      // compaction revisions
	leaseBucket   = "hs_leases"    // leases with a time to live
	retryBucket   = "hs_reconcile" // retry records of the reconcile runtime
	ceilingBucket = "hs_ceiling"   // scratch space for measuring the write ceiling
)
