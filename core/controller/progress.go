package controller

import "github.com/sluicemq/sluice/core"

// Progress is how far a broker applied the metadata log by its last valid heartbeat to
// this controller, and when that heartbeat came. DescribeQuorum reports it as each
// replica's log end offset: a broker applies only committed records, so the gap to the
// controller's applied index is its lag.
type Progress struct {
	Index uint64
	At    core.Time
}

// Progress returns what each broker's last heartbeat to this controller said, by node
// id; brokers not heard from since it became active are absent.
func (c *Controller) Progress() map[int32]Progress {
	out := make(map[int32]Progress, len(c.progress))
	for id, p := range c.progress {
		out[id] = p
	}
	return out
}
