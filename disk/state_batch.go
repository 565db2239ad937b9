package disk

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// StateBatch is a group of writes PebbleState.Commit applies atomically, with one
// synced commit: the raft log store (disk/raftstore) appends several entries, or drops
// a range of them, in one fsync.
type StateBatch struct{ ops []stateOp }

// stateOp is one write of a batch: a set, or the deletion of every key in [key, end).
type stateOp struct {
	rangeDel bool
	key, end []byte
	val      []byte
}

// Set stores val under key when the batch commits.
func (b *StateBatch) Set(key, val []byte) {
	b.ops = append(b.ops, stateOp{key: key, val: val})
}

// DeleteRange removes every key in [start, end) when the batch commits.
func (b *StateBatch) DeleteRange(start, end []byte) {
	b.ops = append(b.ops, stateOp{rangeDel: true, key: start, end: end})
}

// Len is the number of writes in the batch.
func (b *StateBatch) Len() int { return len(b.ops) }

// Commit applies the batch atomically with one synced commit: every write is durable
// when it returns nil, and none is visible before. A failed commit is in doubt and
// fails the store as Set does.
func (p *PebbleState) Commit(b *StateBatch) error {
	return p.write(func() error {
		pb := p.db.NewBatch()
		defer func() { _ = pb.Close() }()
		for _, op := range b.ops {
			var err error
			if op.rangeDel {
				err = pb.DeleteRange(op.key, op.end, nil)
			} else {
				err = pb.Set(op.key, op.val, nil)
			}
			if err != nil {
				return err
			}
		}
		return pb.Commit(writeOpts())
	})
}

// First returns a copy of the smallest key with the prefix and of its value; ok is
// false when no key has the prefix.
func (p *PebbleState) First(prefix []byte) (key, val []byte, ok bool, err error) {
	return p.edge(prefix, true)
}

// Last returns a copy of the greatest key with the prefix and of its value; ok is false
// when no key has the prefix.
func (p *PebbleState) Last(prefix []byte) (key, val []byte, ok bool, err error) {
	return p.edge(prefix, false)
}

func (p *PebbleState) edge(prefix []byte, first bool) (key, val []byte, ok bool, err error) {
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, nil, false, err
	}
	if first {
		ok = it.First()
	} else {
		ok = it.Last()
	}
	if ok {
		key = append([]byte(nil), it.Key()...)
		var v []byte
		v, err = it.ValueAndErr()
		val = append([]byte(nil), v...)
	}
	return key, val, ok && err == nil, errors.Join(err, it.Close())
}
