package broker

// Request quotas (KIP-124): request_percentage bounds the share of one request
// handler's time a user or client id may take, as a percentage (100: one thread's
// whole time). It uses the byte-rate quotas' machinery (quotas.go): the same entity
// precedence, the same windows (quota.window.num × quota.window.size.seconds), the same
// throttle formula, and the same mute (Reply.MuteMs, rule E8) and hold of read-ahead
// Produce and Fetch requests (quota_hold.go).
//
// What is metered is time, which the pure core cannot measure: the driver reports it.
// After the step that handled a Request, it steps HandlerTime with how long that step
// took (runtime: the step's wall time, which is what Kafka's request-handler time is;
// a driver that never reports leaves request_percentage unenforced). The time is
// charged to the request's entity as Kafka charges it, nanoseconds × 100 / 1e9
// "percent-seconds", so the measured rate is a percentage.
//
// Every answer to a metered client (every API, as Kafka's request quota) is checked
// when it is sent: if the entity's rate is over its bound, the answer carries
// ThrottleMillis, (rate - bound) / bound × window as for byte rates but at most one
// window (Kafka's cap for request quotas), and mutes the connection as long. A
// request's own time is known only once its step ends, so it counts from the next
// answer on (Kafka counts it in its own answer): one request late, which a client
// sending many requests does not notice. The request is always served. Where a byte
// rate throttles the same answer, the longer of the two applies.
//
// Exempt, as in Kafka: inter-broker requests (follower fetches, the controller RPCs,
// Envelope and what it forwards, which the forwarding node charged).

import "github.com/twmb/franz-go/pkg/kmsg"

// nanosPerPercentSecond converts handler time to the quota's unit: 1 % of a second.
const nanosPerPercentSecond = 1e9 / 100

// exemptFromRequestQuota says whether r is inter-broker traffic, never metered.
func exemptFromRequestQuota(r Request) bool {
	if r.Forwarded {
		return true
	}
	switch m := r.Msg.(type) {
	case *kmsg.FetchRequest:
		return m.ReplicaID >= 0
	case *kmsg.EnvelopeRequest, *kmsg.AlterPartitionRequest, *kmsg.BrokerRegistrationRequest,
		*kmsg.BrokerHeartbeatRequest, *kmsg.AllocateProducerIDsRequest,
		*kmsg.ControlledShutdownRequest:
		return true
	}
	return false
}

// requestQuota resolves r's request_percentage quota: its bound and sensor key.
func (n *node) requestQuota(r Request) (float64, sensorKey, bool) {
	if !n.image.HasQuotas() || r.Msg == nil || exemptFromRequestQuota(r) {
		return 0, sensorKey{}, false
	}
	return resolveQuota(n.image, quotaRequest, quotaUser(r.Principal), r.ClientID)
}

// chargeHandlerTime records a handled request's time against its quota, if any.
func (n *node) chargeHandlerTime(in HandlerTime) {
	_, k, ok := n.requestQuota(in.Request)
	if !ok || in.Nanos <= 0 {
		return
	}
	cfg, now := n.cfg.Quotas, int64(n.now)/1e6
	n.reqQuotas.sensorFor(cfg, now, k).record(cfg, now, float64(in.Nanos)/nanosPerPercentSecond)
}

// requestThrottleMs is how long r's answer throttles its client under its
// request_percentage quota: 0 when under it (or none applies), else at most one window.
// A throttle mutes the connection; posted to the replica manager, which holds the
// Produce and Fetch requests read ahead meanwhile.
func (n *node) requestThrottleMs(r Request) int32 {
	bound, k, ok := n.requestQuota(r)
	if !ok {
		return 0
	}
	cfg, now := n.cfg.Quotas, int64(n.now)/1e6
	s := n.reqQuotas.sensorFor(cfg, now, k)
	t := min(s.throttleMs(cfg, now, bound), cfg.windowMs())
	if t <= 0 {
		return 0
	}
	n.logThrottle(s, now, r, quotaRequest, bound, t)
	n.post(msgConnThrottled{conn: r.Conn, until: n.now.AddMillis(t)})
	return int32(t)
}

// throttleAnswer applies r's request quota to its answer: the longer of the throttle
// resp already carries (or muteMs, a byte rate's) and the request quota's. It returns
// the mute for the reply.
func (n *node) throttleAnswer(r Request, resp kmsg.Response, muteMs int32) int32 {
	t := n.requestThrottleMs(r)
	if t <= muteMs {
		return muteMs
	}
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		if cur, _ := tr.Throttle(); cur < t {
			resp.(kmsg.SetThrottleResponse).SetThrottle(t)
		}
	}
	return t
}
