package broker

// Client quotas (KIP-13, KIP-55, KIP-219): producer_byte_rate and consumer_byte_rate,
// set with AlterClientQuotas and kept in the replicated metadata, so every node
// enforces the same ones.
//
// Which quota applies to a request is Kafka's most-specific match, per quota key, over
// the user (the principal's name: "ANONYMOUS" for User:ANONYMOUS) and the request
// header's client id, in this order:
//
//	user=U,client-id=C   user=U,client-id=<default>   user=U
//	user=<default>,client-id=C   user=<default>,client-id=<default>   user=<default>
//	client-id=C   client-id=<default>
//
// The first entity holding the key gives the bound. The rate it bounds is shared by
// every client the entity's level names: a user=U quota meters all of U's client ids
// together, a <default> quota meters each user (or client id) on its own. No match:
// no quota, nothing is metered.
//
// The rate is measured as Kafka's metrics measure it: quota.window.num samples (11) of
// quota.window.size.seconds (1 s), on the broker's clock; a sample starts at the first
// byte recorded after the previous one's window ended, samples silent for the whole
// span are forgotten, and the rate divides the bytes of the live samples by the time
// since the oldest one started, counted as at least num-1 whole windows (so a client's
// first burst is measured over 10 s, not over its first millisecond). Produce records
// the request's batch bytes when it arrives; a consumer Fetch records its response's
// record bytes when it is answered (a follower's fetch is never metered: client quotas
// do not throttle replication). When the rate is over the bound the answer carries
// ThrottleMillis, Kafka's time for the rate to come back to the bound,
//
//	throttle = (rate - bound) / bound × window,
//
// and the reply mutes the connection for that long (Reply.MuteMs, rule E8): the
// driver reads no further request from it until then, so a client that ignores the
// throttle cannot exceed its quota either; what it sent ahead waits in the broker
// (quota_hold.go). A Fetch's response is capped at what the
// quota lets through in num-1 windows, as Kafka caps it. Unlike Kafka, a throttled
// Fetch still carries the records it read (they were counted): the mute that follows
// makes up for them. request_percentage, a share of handler time, is metered by the
// same sensors from times the driver reports (quota_request.go).

import (
	"math"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/meta"
)

// The quota keys Sluice knows (Kafka's names).
const (
	keyProducerByteRate        = "producer_byte_rate"
	keyConsumerByteRate        = "consumer_byte_rate"
	keyRequestPercentage       = "request_percentage"
	quotaTypeUser              = "user"
	quotaTypeClientID          = "client-id"
	quotaTypeIP                = "ip"
	maxQuotaSensors            = 100_000 // entities metered at once (see quotaState.sensorFor)
	maxThrottleMs              = math.MaxInt32
	quotaLogEveryMs      int64 = 10_000 // at most one "client throttled" line per entity
)

// QuotaConfig holds the quota windows (Kafka's settings and defaults).
type QuotaConfig struct {
	// WindowNum is quota.window.num: how many samples the rate is measured over.
	WindowNum int
	// WindowSizeSeconds is quota.window.size.seconds: each sample's length.
	WindowSizeSeconds int
}

// DefaultQuotaConfig returns Kafka's defaults: 11 samples of 1 s.
func DefaultQuotaConfig() QuotaConfig { return QuotaConfig{WindowNum: 11, WindowSizeSeconds: 1} }

// quotaSettings lists the settings QuotaConfig.set accepts, with their lower bounds.
var quotaSettings = []intSetting[QuotaConfig]{
	{"quota.window.num", 1, func(c *QuotaConfig) *int { return &c.WindowNum }},
	{"quota.window.size.seconds", 1, func(c *QuotaConfig) *int { return &c.WindowSizeSeconds }},
}

func (c *QuotaConfig) set(name, value string) (bool, error) {
	return setIntSetting(quotaSettings, c, name, value)
}

func quotaSettingNames() []string { return intSettingNames(quotaSettings) }

// quotaKind is what a quota meters.
type quotaKind uint8

const (
	quotaProduce quotaKind = iota // producer_byte_rate
	quotaFetch                    // consumer_byte_rate
	quotaRequest                  // request_percentage (quota_request.go)
)

func (k quotaKind) key() string {
	switch k {
	case quotaProduce:
		return keyProducerByteRate
	case quotaFetch:
		return keyConsumerByteRate
	case quotaRequest:
		return keyRequestPercentage
	default:
		return "quota(?)"
	}
}

// sensorKey names one metered rate: the kind and the user and client id the matched
// entity's level names (Kafka's metric tags); overflow is the one shared sensor used
// when maxQuotaSensors are in use.
type sensorKey struct {
	kind            quotaKind
	user, client    string
	hasUser, hasCli bool
	overflow        bool
}

// rateSample is one window of a rate: bytes recorded since start (ms), last at last.
type rateSample struct {
	start, last int64
	value       float64
}

// sensor is one rate over WindowNum samples (Kafka's SampledStat with one extra
// sample kept, and Rate's window size).
type sensor struct {
	samples []rateSample
	cur     int
	used    int64 // ms of the last record, for eviction
	logged  int64 // ms of the last "throttled" log line, 0: never
	held    int   // throttled answers since that line
}

// quotaState is the broker's client quota meters.
type quotaState struct {
	sensors   map[sensorKey]*sensor
	nextSweep int64                // ms: when idle sensors are next dropped
	holds     map[uint64]*connHold // throttled connections (quota_hold.go)
}

// quotaUser is the user name quotas match for a principal ("User:alice" → "alice");
// an empty principal is the anonymous one.
func quotaUser(principal string) string {
	if principal == "" {
		return "ANONYMOUS"
	}
	if i := strings.IndexByte(principal, ':'); i >= 0 {
		return principal[i+1:]
	}
	return principal
}

// resolveQuota finds the most specific entity holding key for (user, client): its
// bound and the sensor it meters; ok is false when no quota applies.
func resolveQuota(im *meta.Image, kind quotaKind, user, client string) (float64,
	sensorKey, bool) {
	if !im.HasQuotas() {
		return 0, sensorKey{}, false
	}
	u, c, du, dc := meta.Named(user), meta.Named(client), meta.DefaultName(), meta.DefaultName()
	levels := [...]struct {
		e          meta.QuotaEntity
		byU, byCli bool
	}{
		{meta.QuotaEntity{User: u, ClientID: c}, true, true},
		{meta.QuotaEntity{User: u, ClientID: dc}, true, true},
		{meta.QuotaEntity{User: u}, true, false},
		{meta.QuotaEntity{User: du, ClientID: c}, true, true},
		{meta.QuotaEntity{User: du, ClientID: dc}, true, true},
		{meta.QuotaEntity{User: du}, true, false},
		{meta.QuotaEntity{ClientID: c}, false, true},
		{meta.QuotaEntity{ClientID: dc}, false, true},
	}
	for _, l := range levels {
		if v, ok := im.Quota(l.e, kind.key()); ok {
			k := sensorKey{kind: kind, hasUser: l.byU, hasCli: l.byCli}
			if l.byU {
				k.user = user
			}
			if l.byCli {
				k.client = client
			}
			return v, k, true
		}
	}
	return 0, sensorKey{}, false
}

// windowMs is one sample's length in ms.
func (c QuotaConfig) windowMs() int64 { return int64(c.WindowSizeSeconds) * 1000 }

// record adds v at now (ms), starting a new sample when the current one's window ended.
func (s *sensor) record(cfg QuotaConfig, now int64, v float64) {
	if len(s.samples) == 0 {
		s.samples = append(s.samples, rateSample{start: now, last: now})
	}
	cur := &s.samples[s.cur]
	if now-cur.start >= cfg.windowMs() {
		s.cur = (s.cur + 1) % (cfg.WindowNum + 1)
		if s.cur >= len(s.samples) {
			s.samples = append(s.samples, rateSample{start: now, last: now})
		} else {
			s.samples[s.cur] = rateSample{start: now, last: now}
		}
		cur = &s.samples[s.cur]
	}
	cur.value += v
	cur.last = now
	s.used = now
}

// purge forgets samples with nothing recorded for the whole span.
func (s *sensor) purge(cfg QuotaConfig, now int64) {
	span := int64(cfg.WindowNum) * cfg.windowMs()
	for i := range s.samples {
		if now-s.samples[i].last >= span {
			s.samples[i] = rateSample{start: now, last: now}
		}
	}
}

// windowSize is the time (ms) the rate divides by: since the oldest live sample
// started, at least WindowNum-1 whole windows, at least 1 ms.
func (s *sensor) windowSize(cfg QuotaConfig, now int64) int64 {
	s.purge(cfg, now)
	oldest := now
	for _, x := range s.samples {
		oldest = min(oldest, x.start)
	}
	elapsed := now - oldest
	w := cfg.windowMs()
	if full, least := elapsed/w, int64(cfg.WindowNum-1); full < least {
		elapsed += (least - full) * w
	}
	return max(elapsed, 1)
}

// rate is the measured rate, per second, at now.
func (s *sensor) rate(cfg QuotaConfig, now int64) float64 {
	size := s.windowSize(cfg, now) // purges first
	total := 0.0
	for _, x := range s.samples {
		total += x.value
	}
	return total / (float64(size) / 1000)
}

// throttleMs is how long (ms) until the rate at now is back to bound, 0 when it is
// not over it. A bound of 0 throttles for the whole span of the windows.
func (s *sensor) throttleMs(cfg QuotaConfig, now int64, bound float64) int64 {
	r := s.rate(cfg, now)
	if r <= bound {
		return 0
	}
	if bound <= 0 {
		return int64(cfg.WindowNum) * cfg.windowMs()
	}
	t := math.Round((r - bound) / bound * float64(s.windowSize(cfg, now)))
	return int64(min(t, maxThrottleMs))
}

// sensorFor returns the sensor of k, made if needed. Sensors silent for the whole
// span are dropped (their rate is 0); past maxQuotaSensors, new entities share one
// overflow sensor of their kind, which throttles them together (a flood of client ids
// cannot grow the broker's memory without bound).
func (q *quotaState) sensorFor(cfg QuotaConfig, now int64, k sensorKey) *sensor {
	if s := q.sensors[k]; s != nil {
		return s
	}
	if q.sensors == nil {
		q.sensors = map[sensorKey]*sensor{}
	}
	if len(q.sensors) >= maxQuotaSensors || now >= q.nextSweep {
		q.sweep(cfg, now)
	}
	if len(q.sensors) >= maxQuotaSensors {
		k = sensorKey{kind: k.kind, overflow: true}
		if s := q.sensors[k]; s != nil {
			return s
		}
	}
	s := &sensor{}
	q.sensors[k] = s
	return s
}

// sweep drops the sensors silent for the whole span.
func (q *quotaState) sweep(cfg QuotaConfig, now int64) {
	span := int64(cfg.WindowNum) * cfg.windowMs()
	for k, s := range q.sensors {
		if now-s.used >= span {
			delete(q.sensors, k)
		}
	}
	q.nextSweep = now + span
}

// meterQuota records bytes of kind for r's user and client id and returns how long
// the client must be throttled (0: not over its quota, or no quota applies).
func (rm *replicaManager) meterQuota(r Request, kind quotaKind, bytes int) int32 {
	user := quotaUser(r.Principal)
	bound, k, ok := resolveQuota(rm.image, kind, user, r.ClientID)
	if !ok {
		return 0
	}
	cfg, now := rm.cfg.Quotas, int64(rm.now)/1e6
	s := rm.quotas.sensorFor(cfg, now, k)
	s.record(cfg, now, float64(bytes))
	t := s.throttleMs(cfg, now, bound)
	if t <= 0 {
		return 0
	}
	rm.logThrottle(s, now, r, kind, bound, t)
	rm.holdConn(r.Conn, rm.now.AddMillis(t))
	return int32(t)
}

// quotaFetchCap is the most record bytes a consumer Fetch of r may carry under its
// consumer_byte_rate: what the quota lets through in WindowNum-1 windows (Kafka's
// maxValueInQuotaWindow); -1 when no quota applies.
func (rm *replicaManager) quotaFetchCap(r Request) int {
	bound, _, ok := resolveQuota(rm.image, quotaFetch, quotaUser(r.Principal), r.ClientID)
	if !ok {
		return -1
	}
	cfg := rm.cfg.Quotas
	c := bound * float64(max(cfg.WindowNum-1, 1)) * float64(cfg.WindowSizeSeconds)
	return int(min(c, math.MaxInt32))
}

// logThrottle logs a throttled client at most once per quotaLogEveryMs per sensor,
// with the count of throttled answers since the last line.
func (n *node) logThrottle(s *sensor, now int64, r Request, kind quotaKind,
	bound float64, t int64) {
	s.held++
	if s.logged != 0 && now-s.logged < quotaLogEveryMs {
		return
	}
	n.lg.Info("client throttled: over its quota", zap.String("quota", kind.key()),
		zap.String("principal", r.Principal), zap.String("client_id", r.ClientID),
		zap.Float64("bound", bound), zap.Int64("throttle_ms", t),
		zap.Int("throttled_answers", s.held))
	s.logged, s.held = now, 0
}

// replyMuted sends resp for r and mutes r's connection for muteMs (rule E8), or longer
// when r's request quota throttles it (quota_request.go). resp nil sends nothing
// (acks=0) but still mutes.
func (n *node) replyMuted(r Request, resp kmsg.Response, muteMs int32) {
	n.fixAnswer(r, resp)
	n.fillAuthorizedOps(r, resp) // KIP-430 (authorized_ops.go)
	muteMs = n.throttleAnswer(r, resp, muteMs)
	if resp != nil {
		resp.SetVersion(r.Msg.GetVersion())
		if r.Forwarded {
			resp = envelopeAnswer(resp)
		}
	}
	n.env.Reply(Reply{Conn: r.Conn, ID: r.ID, Msg: resp, MuteMs: int64(muteMs)})
}
