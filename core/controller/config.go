package controller

import (
	"fmt"
	"strconv"
)

// Config holds the controller's settings, named and defaulted as Kafka's.
type Config struct {
	// NodeID is this node's id: the controller is active when the quorum leader is it.
	NodeID int32
	// ClusterID is the id the controller fixes at the cluster's first start
	// (ClusterCreated) and checks every registration against (cluster.id).
	ClusterID string
	// SessionTimeoutMs is broker.session.timeout.ms: a broker not heard from for this
	// long is fenced.
	SessionTimeoutMs int64
	// HeartbeatIntervalMs is broker.heartbeat.interval.ms, how often a broker sends
	// heartbeats. The broker side reads it; the controller only checks that it is below
	// the session timeout.
	HeartbeatIntervalMs int64
	// UncleanLeaderElection is unclean.leader.election.enable: when no ISR member can
	// lead, elect any live replica (acknowledged records may be lost).
	UncleanLeaderElection bool
	// AutoLeaderRebalance is auto.leader.rebalance.enable: move leadership back to each
	// partition's preferred replica every RebalanceIntervalS.
	AutoLeaderRebalance bool
	// RebalanceIntervalS is leader.imbalance.check.interval.seconds.
	RebalanceIntervalS int64
	// MaxInFlight bounds the proposals in flight (sluice.controller.max.inflight.records),
	// so that one step stays short when thousands of partitions need a change: the rest
	// are proposed as answers come back.
	MaxInFlight int
	// RetryBackoffMs is how long the controller waits before proposing again after the
	// metadata log refused a proposal (MetaRejected).
	RetryBackoffMs int64
	// ConnectionLossGraceMs is sluice.broker.connection.loss.grace.ms: once the
	// connection that carried a broker's heartbeats closes (its process died, or the
	// link was reset), the broker is fenced unless it heartbeats again within this
	// long (connloss.go). 0 disables it: only the session timeout fences.
	ConnectionLossGraceMs int64
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{NodeID: 1, ClusterID: "sluice-dev-cluster", SessionTimeoutMs: 9000,
		HeartbeatIntervalMs: 2000, AutoLeaderRebalance: true, RebalanceIntervalS: 300,
		MaxInFlight: 256, RetryBackoffMs: 100, ConnectionLossGraceMs: 1000}
}

// SettingNames lists the settings Set accepts.
func SettingNames() []string {
	return []string{"broker.session.timeout.ms", "broker.heartbeat.interval.ms",
		"unclean.leader.election.enable", "auto.leader.rebalance.enable",
		"leader.imbalance.check.interval.seconds", "sluice.controller.max.inflight.records",
		"sluice.broker.connection.loss.grace.ms"}
}

// Set changes one setting by its Kafka name; settings that bound each other are checked
// together by Check once all are set (a config file may name them in any order). It returns ok false for a name that is not
// the controller's (the caller tries its other settings), and an error for a bad value.
func (c *Config) Set(name, value string) (ok bool, err error) {
	switch name {
	case "broker.session.timeout.ms":
		err = setInt(&c.SessionTimeoutMs, value, 1)
	case "broker.heartbeat.interval.ms":
		err = setInt(&c.HeartbeatIntervalMs, value, 1)
	case "unclean.leader.election.enable":
		c.UncleanLeaderElection, err = strconv.ParseBool(value)
	case "auto.leader.rebalance.enable":
		c.AutoLeaderRebalance, err = strconv.ParseBool(value)
	case "leader.imbalance.check.interval.seconds":
		err = setInt(&c.RebalanceIntervalS, value, 1)
	case "sluice.broker.connection.loss.grace.ms":
		err = setInt(&c.ConnectionLossGraceMs, value, 0)
	case "sluice.controller.max.inflight.records":
		var n int64
		if err = setInt(&n, value, 1); err == nil {
			c.MaxInFlight = int(n)
		}
	default:
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%s: %w", name, err)
	}
	return true, nil
}

// Check reports settings that cannot work together.
func (c *Config) Check() error {
	if c.HeartbeatIntervalMs >= c.SessionTimeoutMs {
		return fmt.Errorf("broker.heartbeat.interval.ms (%d) must be below "+
			"broker.session.timeout.ms (%d)", c.HeartbeatIntervalMs, c.SessionTimeoutMs)
	}
	return nil
}

func setInt(dst *int64, v string, lo int64) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("not a number: %q", v)
	}
	if n < lo {
		return fmt.Errorf("%d is below %d", n, lo)
	}
	*dst = n
	return nil
}
