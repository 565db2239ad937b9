package sim

import (
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/lifecycle"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/nodehost"
)

// A World with more than one node runs each node as a cluster member: beside its broker,
// the node hosts the controller (active while it leads the metadata quorum) and the
// broker lifecycle (registration and heartbeats), stepped together by core/nodehost, the
// same host runtime/cluster.go uses in a real process. The controller's proposals go
// to the quorum model (metaquorum.go); the lifecycle's and the broker's RPCs to another
// node's controller, and the brokers' follower fetches, cross the simulated network on
// the nodes' peer links (peers.go), so latency, clogs, resets, pauses and crashes act on
// them. A single-node World keeps the broker alone, as before (its traces unchanged).

// simClusterID is the cluster id every node of a World carries.
const simClusterID = "sluice-sim-cluster"

// clustered reports whether the world's nodes run the controller and lifecycle.
func (w *World) clustered() bool { return len(w.nodes) > 1 || w.cfg.Nodes > 1 }

// newHost makes the controller and lifecycle of this incarnation.
func (n *node) newHost(env nodeEnv) *nodehost.Host {
	ccfg := controller.DefaultConfig()
	ccfg.NodeID, ccfg.ClusterID = n.id+1, simClusterID
	for _, name := range controller.SettingNames() {
		if v, ok := clusterDefault(n.w.cfg, name); ok {
			if _, err := ccfg.Set(name, v); err != nil {
				n.w.fail("world", "controller setting %s: %v", name, err)
			}
		}
	}
	lcfg := lifecycle.DefaultConfig()
	lcfg.Host, lcfg.Port = fmt.Sprintf("node%d.sim", n.id+1), 9092
	lcfg.HeartbeatIntervalMs = ccfg.HeartbeatIntervalMs
	lcfg.SessionTimeoutMs = ccfg.SessionTimeoutMs
	for i := range lcfg.Incarnation {
		lcfg.Incarnation[i] = byte(n.rnd.Between(0, 255))
	}
	// The data directory's id: a node's disk gets a new one when it is lost
	// (faults_cluster.go wipe), as `sluice node` draws one into a new data directory
	// (disk.StorageID). Derived, not drawn, so that no seed's draws move.
	lcfg.StorageID = n.storageID()
	return nodehost.New(nodehost.Config{Controller: ccfg, Lifecycle: lcfg},
		hostEnv{env}, n.rnd)
}

// stepActors steps the node's actors with one input: the host when clustered, else the
// broker alone.
func (n *node) stepActors(in broker.Input) {
	if n.host != nil {
		n.host.Step(n.brokerNow(), in)
		return
	}
	n.b.Step(n.brokerNow(), in)
}

// hostEnv is the controller's and lifecycle's Env: the broker's, with the same
// incarnation checks and crash holds.
type hostEnv struct{ e nodeEnv }

func (h hostEnv) Propose(rec meta.Record, token uint64) { h.e.ProposeMeta(rec, token) }
func (h hostEnv) SetTimer(at core.Time, id uint64)      { h.e.SetTimer(at, id) }
func (h hostEnv) CancelTimer(id uint64)                 { h.e.CancelTimer(id) }
func (h hostEnv) Reply(r broker.Reply)                  { h.e.Reply(r) }
func (h hostEnv) SendPeer(p broker.PeerRequest)         { h.e.sendRemote(p) }
func (h hostEnv) PeerAddr(int32, string, int32)         {} // links are by node id
func (h hostEnv) Logger() *zap.Logger                   { return h.e.n.lg }

// Fatal: the lifecycle refuses to serve (a foreign cluster id); in a World that is a bug.
func (h hostEnv) Fatal(err error) {
	if h.e.live() {
		h.e.n.w.fail("world", "node %d: fatal: %v", h.e.n.id, err)
	}
}

// isControllerSetting reports whether name is the controller's, not the broker's.
func isControllerSetting(name string) bool {
	for _, c := range controller.SettingNames() {
		if c == name {
			return true
		}
	}
	return false
}

// replicationFactor is the replication factor the world's clients create topics with:
// min(3, nodes), as Kafka's defaults on a cluster of that size.
func (c Config) replicationFactor() int16 { return int16(min(3, max(c.Nodes, 1))) }

// clusterDefaults are the settings of a clustered world unless --set says otherwise:
// Kafka's, with the timeouts scaled to a run of seconds (a crashed follower must leave
// the ISR, a crashed broker be fenced, well within the safety phase), and
// min.insync.replicas 2 once there are three replicas, so that acks=all means a write
// survives a node.
func clusterDefaults(c Config) map[string]string {
	rf := c.replicationFactor()
	mis := int16(1)
	if rf >= 3 {
		mis = 2
	}
	return map[string]string{
		"default.replication.factor":       strconv.Itoa(int(rf)),
		"offsets.topic.replication.factor": strconv.Itoa(int(rf)),
		"min.insync.replicas":              strconv.Itoa(int(mis)),
		"replica.lag.time.max.ms":          "2000",
		"broker.session.timeout.ms":        "2000",
		"broker.heartbeat.interval.ms":     "400",
	}
}

// clusterDefault is setting name of a clustered world: --set's value, else the default.
func clusterDefault(c Config, name string) (string, bool) {
	if v, ok := c.Broker[name]; ok {
		return v, true
	}
	if c.Nodes <= 1 {
		return "", false
	}
	v, ok := clusterDefaults(c)[name]
	return v, ok
}

// clusterClients drops the clients a clustered world does not run yet: the auditor,
// the zombie and the deleter (their checks assume one node answering everything). Group
// members and offset committers run: they find each group's coordinator (route.go), and
// their checks hold across coordinator moves (docs/simulation.md, "Clusters"). The
// configuration was drawn in full first, so the seed's other draws are unchanged.
func clusterClients(c Config) Config {
	c.Audit.On, c.Zombie.On, c.Deletes.On = false, false, false
	return c
}
