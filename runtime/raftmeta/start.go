package raftmeta

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/disk/raftstore"
)

// markerKey is the stable-store key of the applied marker: the raft index and the
// dense index of the last record any incarnation may have delivered (fsm.mark).
var markerKey = []byte("SluiceMetaApplied")

func writeMarker(st raft.StableStore, raftIndex, dense uint64) error {
	v := binary.BigEndian.AppendUint64(nil, raftIndex)
	return st.Set(markerKey, binary.BigEndian.AppendUint64(v, dense))
}

func readMarker(st raft.StableStore) (raftIndex, dense uint64, err error) {
	v, err := st.Get(markerKey)
	if errors.Is(err, raftstore.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("applied marker: %d bytes, want 16", len(v))
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), nil
}

// loadStart builds the boot's Start from what is on disk, before raft runs: the
// newest readable snapshot (the one raft.NewRaft restores too), then the command
// entries of the log after it up to the applied marker. Every entry up to the marker
// was applied, hence committed, and so never changes; every record an earlier
// incarnation delivered is at or below it (M1, M2). Entries past the marker may be
// committed or not: raft applies them once it learns the commit index, and they
// arrive as MetaApplied.
func loadStart(snaps raft.SnapshotStore, logs raft.LogStore, stable raft.StableStore,
	lg *zap.Logger) (broker.Start, error) {
	var st broker.Start
	snapRaft, err := latestSnapshot(snaps, lg, &st)
	if err != nil {
		return st, err
	}
	markRaft, markDense, err := readMarker(stable)
	if err != nil {
		return st, err
	}
	for i := snapRaft + 1; i <= markRaft; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return st, fmt.Errorf("read raft entry %d (applied up to %d): %w", i, markRaft, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		var rec meta.Record
		if err := json.Unmarshal(l.Data, &rec); err != nil {
			return st, fmt.Errorf("raft entry %d is not a metadata record: %w", i, err)
		}
		st.Records = append(st.Records, rec)
	}
	if markRaft > snapRaft && st.LastIndex() != markDense {
		return st, fmt.Errorf("metadata log: %d records up to raft index %d, but %d were "+
			"applied there", st.LastIndex(), markRaft, markDense)
	}
	return st, nil
}

// latestSnapshot fills st's snapshot from the newest snapshot that opens and decodes,
// returning its raft index (0: none). Snapshots that exist but none reads are an error,
// as they are to raft.
func latestSnapshot(snaps raft.SnapshotStore, lg *zap.Logger, st *broker.Start) (uint64,
	error) {
	list, err := snaps.List()
	if err != nil {
		return 0, fmt.Errorf("list metadata snapshots: %w", err)
	}
	for _, m := range list {
		_, rc, err := snaps.Open(m.ID)
		if err != nil {
			lg.Warn("metadata snapshot does not open", zap.String("id", m.ID), zap.Error(err))
			continue
		}
		s, err := decodeSnapshot(rc)
		_ = rc.Close()
		if err != nil {
			lg.Warn("metadata snapshot does not decode", zap.String("id", m.ID),
				zap.Error(err))
			continue
		}
		st.Snapshot, st.SnapshotIndex = s.Records, s.Index
		return m.Index, nil
	}
	if len(list) > 0 {
		return 0, fmt.Errorf("none of the %d metadata snapshots reads", len(list))
	}
	return 0, nil
}
