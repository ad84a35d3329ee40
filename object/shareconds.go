package object

import (
	varint "encoding/binary"
	"time"
)

// conditionLists holds one copy of each short list of conditions seen
// lately in a cache that shares them (ShareConditions): the Ready
// conditions of the pods that became ready in one second are alike, and
// one took some 160 bytes a pod in the controllers' cache. 1 MiB keeps
// some 4,000 lists.
var conditionLists = newInternShards[[]Condition](1<<20, 1024)

// maxSharedConditions is the most conditions a shared list has.
const maxSharedConditions = 4

// conditionBytes is about what a condition takes beyond its strings.
const conditionBytes = 144

// ShareConditions returns the list kept for one equal to conds, keeping
// conds (which the caller gives up) when none is. Only for a list no one
// changes in place, as a cache's decoded parts are: what it returns has
// no room to grow, so an append copies it, and SetCondition must be given
// a copy.
func ShareConditions(conds []Condition) []Condition {
	if len(conds) == 0 || len(conds) > maxSharedConditions {
		return conds
	}
	var buf [512]byte
	key := buf[:0]
	for i := range conds {
		key = conditionKey(key, &conds[i])
	}
	return shareList(conditionLists, key, conds, conditionBytes)
}

// conditionKey appends c's fields to b, strings preceded by their
// lengths and times as instants with their zones' offsets, so that no
// two unequal conditions have one key.
func conditionKey(b []byte, c *Condition) []byte {
	b = appendSized(appendSized(b, c.Type), c.Status)
	b = varint.AppendVarint(b, c.ObservedGeneration)
	for _, t := range []time.Time{c.LastTransitionTime, c.LastUpdateTime, c.LastHeartbeatTime} {
		b = appendTime(b, t)
	}
	return appendSized(appendSized(b, c.Reason), c.Message)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	_, offset := t.Zone()
	b = append(b, 1)
	b = varint.AppendVarint(b, t.Unix())
	b = varint.AppendUvarint(b, uint64(t.Nanosecond()))
	return varint.AppendVarint(b, int64(offset))
}
