package raftmeta

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/disk"
)

// Voter is one voting member of the metadata quorum: its node id and the address of
// its raft transport (--controller-listen).
type Voter struct {
	ID   int32
	Addr string
}

// ParseVoters reads --voters: "1@host:port,2@host:port,3@host:port".
func ParseVoters(s string) ([]Voter, error) {
	var out []Voter
	seen, at := map[int32]bool{}, map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "@")
		if !ok {
			return nil, fmt.Errorf("voter %q: want id@host:port", part)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("voter %q: the id must be a node id (0 or more)", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("voter %q: %w", part, err)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("voter id %d given twice", n)
		}
		if at[addr] {
			return nil, fmt.Errorf("voter address %s given twice: each voter needs its "+
				"own --controller-listen address", addr)
		}
		seen[int32(n)], at[addr] = true, true
		out = append(out, Voter{ID: int32(n), Addr: addr})
	}
	return out, nil
}

// Timing is raft's clock settings and log compaction.
type Timing struct {
	Heartbeat   time.Duration // a follower without contact for this long starts an election
	Election    time.Duration // a candidate without a result for this long starts again
	LeaderLease time.Duration // a leader without a quorum's contact for this long steps down
	Commit      time.Duration // the longest a follower waits to learn a commit
	// SnapshotThreshold is how many new entries make raft snapshot the image;
	// TrailingLogs how many entries a snapshot keeps behind it, for followers that lag.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	SnapshotInterval  time.Duration // how often raft checks the threshold
	// ApplyEnqueue bounds how long a proposal waits to enter raft's queue; one that
	// does not get in is answered Rejected (it was never appended).
	ApplyEnqueue time.Duration
}

// DefaultTiming is hashicorp/raft's defaults: elections within about 1-2 s of a
// leader's loss on a LAN.
func DefaultTiming() Timing {
	return Timing{Heartbeat: time.Second, Election: time.Second,
		LeaderLease: 500 * time.Millisecond, Commit: 50 * time.Millisecond,
		SnapshotThreshold: 8192, TrailingLogs: 10240, SnapshotInterval: 2 * time.Minute,
		ApplyEnqueue: 5 * time.Second}
}

// TestTiming is for in-process tests on 127.0.0.1: elections in a few hundred
// milliseconds, still slow enough not to flap on a loaded 2-core machine under -race.
func TestTiming() Timing {
	return Timing{Heartbeat: 150 * time.Millisecond, Election: 150 * time.Millisecond,
		LeaderLease: 100 * time.Millisecond, Commit: 10 * time.Millisecond,
		SnapshotThreshold: 8192, TrailingLogs: 10240, SnapshotInterval: 2 * time.Minute,
		ApplyEnqueue: time.Second}
}

// SteadyTestTiming is TestTiming with a leader that keeps its lease through the
// scheduling stalls of a loaded machine, for tests whose script assumes one leader
// throughout. With TestTiming's 100 ms lease, a make test beside four builds on two
// cores (load 15-19) saw leaders step down mid-script (TestNonvoterFollowsTheLog,
// TestClusterCreatesTopicsThroughTheController).
func SteadyTestTiming() Timing {
	t := TestTiming()
	t.Heartbeat, t.Election, t.LeaderLease = 600*time.Millisecond, 600*time.Millisecond,
		500*time.Millisecond
	return t
}

// Config is one node's side of the quorum.
type Config struct {
	NodeID int32
	// Voters is the quorum; it must name NodeID. Each voter's address is where its raft
	// transport listens. Every voter bootstraps the same configuration the first time it
	// starts (no raft state on disk yet).
	Voters []Voter
	// Addr is this node's transport address, as peers reach it. A voter's defaults to
	// its voter address; a node that is not a voter must give it, and follows the log
	// once the leader adds it as a non-voter (Meta.AddNonvoter).
	Addr string
	// Bind is where this node's transport listens; empty: Addr.
	Bind string
	// State is the node's pebble store: the raft log and stable store live in it under
	// "raft/" (disk/raftstore). The adapter does not close it.
	State *disk.PebbleState
	// SnapshotDir holds raft's snapshots of the metadata image (two are kept).
	SnapshotDir string
	Logger      *zap.Logger
	Timing      Timing
	// TLS, when set, makes the transport (raft's connections and joins) TLS with
	// mutual authentication; nil: plaintext.
	TLS *TransportTLS
	// OnFatal is called (once, from an adapter goroutine) when this incarnation can no
	// longer keep the port's rules: a snapshot installed from the leader skipped records
	// never delivered, or the applied marker could not be written. Nothing more is
	// delivered; the node must restart, and its next Start is right again.
	OnFatal func(error)
	// JoinInUseGiveUp is how long a non-voter's join may be refused because a live
	// broker holds its id before the node gives up (lifecycle.ErrNodeIDInUse through
	// OnFatal). Longer than the broker session plus its grace, so that a node moved to a
	// new address is accepted once its old process was fenced. Zero: 30 s.
	JoinInUseGiveUp time.Duration
}

func (c *Config) check() error {
	var errs []error
	if c.State == nil {
		errs = append(errs, errors.New("no state store"))
	}
	if c.SnapshotDir == "" {
		errs = append(errs, errors.New("no snapshot directory"))
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Timing == (Timing{}) {
		c.Timing = DefaultTiming()
	}
	if v := c.voter(); v != nil && c.Addr == "" {
		c.Addr = v.Addr
	}
	if c.TLS != nil {
		if err := c.TLS.check(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Addr == "" {
		errs = append(errs, fmt.Errorf("node %d is not one of the voters %v and has no "+
			"transport address", c.NodeID, c.Voters))
	}
	return errors.Join(errs...)
}

// voter is this node's entry in Voters, or nil when it does not vote.
func (c *Config) voter() *Voter {
	for i := range c.Voters {
		if c.Voters[i].ID == c.NodeID {
			return &c.Voters[i]
		}
	}
	return nil
}
