package lifecycle

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

// Config is the node's identity and the lifecycle's timing.
type Config struct {
	NodeID      int32
	ClusterID   string
	Incarnation [16]byte // drawn at each process start
	// StorageID is the node's data directory id (drawn when the directory was first
	// used, disk.StorageID); zero when unknown. Registration carries it.
	StorageID [16]byte
	Host      string // the advertised Kafka listener peers use
	Port      int32
	Rack      string
	Listeners []meta.Endpoint // every advertised listener (empty: only Host and Port)
	// HeartbeatIntervalMs is broker.heartbeat.interval.ms.
	HeartbeatIntervalMs int64
	// RequestTimeoutMs bounds one RPC to the controller.
	RequestTimeoutMs int64
	// RetryBackoffMs is the wait after a refused or failed RPC.
	RetryBackoffMs int64
	// SessionTimeoutMs is broker.session.timeout.ms. A registration refused as a
	// duplicate for twice as long is given up (ErrNodeIDInUse): the process holding the
	// id is alive, not a previous life of this node whose session has not ended yet.
	SessionTimeoutMs int64
}

// DefaultConfig returns Kafka's timing.
func DefaultConfig() Config {
	return Config{HeartbeatIntervalMs: 2000, RequestTimeoutMs: 5000, RetryBackoffMs: 100,
		SessionTimeoutMs: 9000}
}

// ErrNodeIDInUse is the fatal error of a node whose id another live process holds:
// the controller refused its registration (DUPLICATE_BROKER_REGISTRATION) for twice
// broker.session.timeout.ms.
var ErrNodeIDInUse = errors.New("node id in use by another live process")

// Env is what the lifecycle asks of its node. Every method returns at once.
type Env interface {
	// Send sends msg to the controller on node to; exactly one Reply{ID: id} follows.
	Send(to int32, id uint64, msg controller.Message, timeoutMs int64)
	// SetTimer asks for TimerFired{ID: id} at time at or later.
	SetTimer(at core.Time, id uint64)
	// CancelTimer drops a timer that has not fired.
	CancelTimer(id uint64)
	// Fatal says the node must stop: it cannot be a member of this cluster.
	Fatal(err error)
	Logger() *zap.Logger
}

// Input is one thing that happens to the lifecycle; the set is closed.
type Input interface{ isInput() }

// LeaderChanged names the metadata quorum's leader, whose controller is active (-1:
// none known).
type LeaderChanged struct{ Leader int32 }

// Applied says the node applied the metadata log up to Index.
type Applied struct{ Index uint64 }

// Reply answers one Send: the controller's Response, or Err when none came (the
// request's outcome is unknown).
type Reply struct {
	ID   uint64
	Resp controller.Response
	Err  error
}

// TimerFired delivers a timer set with SetTimer.
type TimerFired struct{ ID uint64 }

// Shutdown begins a controlled shutdown: the lifecycle asks the controller to move
// every leadership and ISR place off the node (ControlledShutdown) instead of
// heartbeating, until it answers; Status.ShutDown then says the node may exit. A node
// that is not registered has nothing to move and is done at once.
type Shutdown struct{}

// LinkDown says the node's connection to node Node's listener closed. When Node is the
// controller's and the last RPC to it went through, the next one goes at once instead
// of at the next heartbeat: that controller saw the connection close and fences this
// node unless it hears from it within sluice.broker.connection.loss.grace.ms
// (docs/controller.md). After a failed RPC the retry backoff stands, so a controller
// that cannot be reached is not hammered.
type LinkDown struct{ Node int32 }

func (LinkDown) isInput()      {}
func (LeaderChanged) isInput() {}
func (Applied) isInput()       {}
func (Reply) isInput()         {}
func (TimerFired) isInput()    {}
func (Shutdown) isInput()      {}

// Status is the node's membership as its lifecycle knows it.
type Status struct {
	Leader     int32 // the quorum leader (-1: none known)
	Registered bool  // the controller answered a registration of this incarnation
	Epoch      int64 // the broker epoch of that registration
	Fenced     bool  // as the last heartbeat answer said (true until one says otherwise)
	// ShutDown: a controlled shutdown (Shutdown) is done; the node leads nothing and
	// holds only the ISR places no other broker could take.
	ShutDown bool
}

// Lifecycle is the actor.
type Lifecycle struct {
	cfg Config
	env Env
	lg  *zap.Logger
	now core.Time

	st       Status
	applied  uint64
	inFlight uint64 // the id of the RPC in flight, 0 when none
	ids      uint64
	timer    uint64    // the armed timer's id, 0 when none
	timerAt  core.Time // when it fires
	nextAt   core.Time // when the next RPC is due
	stopped  bool
	failing  bool // the last RPC failed or was refused: the next waits out the backoff
	shutdown bool // Shutdown came: ask ControlledShutdown instead of heartbeating
	asked    bool // the RPC in flight is the ControlledShutdown
	// dupSince is when the controller first refused this incarnation's registration as
	// a duplicate, in the run of refusals going on (zero: none).
	dupSince core.Time
}

// New returns a lifecycle that has registered nothing yet.
func New(cfg Config, env Env) *Lifecycle {
	return &Lifecycle{cfg: cfg, env: env, lg: env.Logger().Named("lifecycle"),
		st: Status{Leader: -1, Fenced: true}}
}

// Status returns the membership as known now.
func (l *Lifecycle) Status() Status { return l.st }

// Step delivers one input at time now.
func (l *Lifecycle) Step(now core.Time, in Input) {
	l.now = max(l.now, now)
	if l.stopped {
		return
	}
	switch in := in.(type) {
	case LeaderChanged:
		if in.Leader != l.st.Leader {
			l.st.Leader = in.Leader
			l.nextAt = l.now // a new controller: tell it now
		}
	case Applied:
		l.applied = max(l.applied, in.Index)
	case LinkDown:
		if in.Node == l.st.Leader && !l.failing && l.nextAt > l.now {
			l.lg.Debug("link to the controller went down: heartbeating at once",
				zap.Int32("controller", in.Node))
			l.nextAt = l.now
		}
	case Reply:
		l.reply(in)
	case TimerFired:
		if in.ID != l.timer {
			return // cancelled or superseded
		}
		l.timer = 0
	case Shutdown:
		if !l.shutdown {
			l.shutdown, l.nextAt = true, l.now
			l.lg.Info("controlled shutdown: asking the controller to move leadership away")
		}
	default:
		panic(fmt.Sprintf("lifecycle: unknown input %T", in))
	}
	l.act()
}

// act sends the RPC that is due, or arms the timer for when one will be.
func (l *Lifecycle) act() {
	if l.shutdown && !l.st.Registered && l.inFlight == 0 {
		l.shutDown("not registered: nothing to move")
	}
	if l.inFlight != 0 || l.st.Leader < 0 || l.stopped {
		return
	}
	if l.now < l.nextAt {
		l.arm(l.nextAt)
		return
	}
	l.ids++
	l.inFlight = l.ids
	if l.shutdown {
		l.asked = true
		l.env.Send(l.st.Leader, l.inFlight, controller.ControlledShutdown{NodeID: l.cfg.NodeID,
			BrokerEpoch: l.st.Epoch}, l.cfg.RequestTimeoutMs)
		return
	}
	if !l.st.Registered {
		l.env.Send(l.st.Leader, l.inFlight, controller.RegisterBroker{NodeID: l.cfg.NodeID,
			Incarnation: l.cfg.Incarnation, ClusterID: l.cfg.ClusterID, Host: l.cfg.Host,
			Port: l.cfg.Port, Rack: l.cfg.Rack, Listeners: l.cfg.Listeners,
			StorageID: l.cfg.StorageID}, l.cfg.RequestTimeoutMs)
		return
	}
	l.env.Send(l.st.Leader, l.inFlight, controller.Heartbeat{NodeID: l.cfg.NodeID,
		BrokerEpoch: l.st.Epoch, MetadataIndex: l.applied}, l.cfg.RequestTimeoutMs)
}

// arm sets the one timer for at, replacing an earlier one.
func (l *Lifecycle) arm(at core.Time) {
	if l.timer != 0 {
		if l.timerAt == at {
			return
		}
		l.env.CancelTimer(l.timer)
	}
	l.ids++
	l.timer, l.timerAt = l.ids, at
	l.env.SetTimer(at, l.timer)
}

func (l *Lifecycle) reply(in Reply) {
	if in.ID != l.inFlight {
		return // an answer to an RPC given up on
	}
	l.inFlight = 0
	asked := l.asked
	l.asked, l.failing = false, false
	if in.Err != nil {
		l.lg.Debug("controller unreachable", zap.Int32("controller", l.st.Leader),
			zap.Error(in.Err))
		l.retryLater()
		return
	}
	switch r := in.Resp.(type) {
	case controller.RegisterBrokerResponse:
		l.registered(r)
	case controller.ControlledShutdownResponse:
		l.shutdownAnswered(r.Err)
	case controller.HeartbeatResponse:
		if asked { // a peer's controller answers ControlledShutdown as a heartbeat
			if r.Err == 0 && !r.ShuttingDown {
				r.Err = kerr.UnknownServerError.Code
			}
			l.shutdownAnswered(r.Err)
			return
		}
		l.heartbeatAnswered(r)
	default:
		panic(fmt.Sprintf("lifecycle: unexpected response %T", in.Resp))
	}
}

func (l *Lifecycle) registered(r controller.RegisterBrokerResponse) {
	switch r.Err {
	case 0:
		l.dupSince = 0
		l.st.Registered, l.st.Epoch, l.st.Fenced = true, r.BrokerEpoch, true
		l.lg.Info("registered with the controller", zap.Int32("controller", l.st.Leader),
			zap.Int64("broker_epoch", r.BrokerEpoch))
		l.nextAt = l.now // a first heartbeat at once: it may already unfence the node
	case kerr.InconsistentClusterID.Code:
		l.stopped = true
		l.env.Fatal(fmt.Errorf("the cluster refused node %d: its data directory "+
			"belongs to another cluster than %q (INCONSISTENT_CLUSTER_ID)", l.cfg.NodeID,
			l.cfg.ClusterID))
	case kerr.DuplicateBrokerRegistration.Code:
		l.duplicate()
	default:
		l.refused("registration", r.Err)
	}
}

func (l *Lifecycle) heartbeatAnswered(r controller.HeartbeatResponse) {
	switch r.Err {
	case 0:
		if l.st.Fenced != r.Fenced {
			l.lg.Info("fencing changed", zap.Bool("fenced", r.Fenced),
				zap.Int64("broker_epoch", l.st.Epoch))
		}
		l.st.Fenced = r.Fenced
		l.nextAt = l.now.AddMillis(l.interval())
		if l.shutdown {
			l.nextAt = l.now // the ControlledShutdown waited for this heartbeat
		}
	case kerr.StaleBrokerEpoch.Code, kerr.BrokerIDNotRegistered.Code:
		l.lg.Warn("the controller no longer knows this registration; registering again",
			zap.Int64("broker_epoch", l.st.Epoch), zap.Int16("code", r.Err))
		l.st.Registered, l.st.Fenced = false, true
		l.nextAt = l.now
	default:
		l.refused("heartbeat", r.Err)
	}
}

// shutdownAnswered ends a controlled shutdown when the controller says it is done, or
// when it no longer knows this registration (nothing of it is left to move); otherwise
// it asks again after the backoff (a new controller is asked when one is announced).
func (l *Lifecycle) shutdownAnswered(code int16) {
	switch code {
	case 0:
		l.shutDown("the controller moved leadership away")
	case kerr.StaleBrokerEpoch.Code, kerr.BrokerIDNotRegistered.Code:
		l.shutDown("the controller no longer knows this registration")
	default:
		l.refused("controlled shutdown", code)
	}
}

func (l *Lifecycle) shutDown(why string) {
	l.st.ShutDown, l.stopped = true, true
	if l.timer != 0 {
		l.env.CancelTimer(l.timer)
		l.timer = 0
	}
	l.lg.Info("controlled shutdown done", zap.String("why", why))
}

// interval is the heartbeat period: shorter while fenced, so that the controller sees
// soon that a starting node caught up.
func (l *Lifecycle) interval() int64 {
	if l.st.Fenced {
		return max(l.cfg.HeartbeatIntervalMs/8, l.cfg.RetryBackoffMs, 1)
	}
	return max(l.cfg.HeartbeatIntervalMs, 1)
}

func (l *Lifecycle) refused(what string, code int16) {
	l.lg.Debug("controller refused "+what, zap.Int16("code", code),
		zap.String("error", kerr.ErrorForCode(code).Error()))
	l.retryLater()
}

func (l *Lifecycle) retryLater() {
	l.failing = true
	l.nextAt = l.now.AddMillis(max(l.cfg.RetryBackoffMs, 1))
}

// duplicate takes a DUPLICATE_BROKER_REGISTRATION: another process's registration of
// this node id is alive. That is this node's own previous life while its session runs
// out (a restart within broker.session.timeout.ms), so the registration is retried; but
// refusals that go on for twice the session timeout mean a live process holds the id
// (two nodes started with one --id), and the node gives up (ErrNodeIDInUse).
func (l *Lifecycle) duplicate() {
	if l.dupSince == 0 {
		l.dupSince = max(l.now, 1)
	}
	limit := 2 * max(l.cfg.SessionTimeoutMs, 1)
	if mutantOn("duplicate-id-fatal-at-once") || l.now >= l.dupSince.AddMillis(limit) {
		l.stopped = true
		l.env.Fatal(fmt.Errorf("%w: the controller has refused to register node %d for "+
			"%d ms (twice broker.session.timeout.ms) because another live process is "+
			"registered with that id; give this node its own --id", ErrNodeIDInUse,
			l.cfg.NodeID, int64(l.now-l.dupSince)/1e6))
		return
	}
	l.lg.Warn("another live process is registered with this node id; retrying until "+
		"its session expires", zap.Int32("node", l.cfg.NodeID),
		zap.Int64("refused_for_ms", int64(l.now-l.dupSince)/1e6),
		zap.Int64("gives_up_after_ms", limit))
	l.retryLater()
}
