package runtime

import (
	"errors"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	kafkanet "github.com/sluicemq/sluice/net"
)

// requestMetrics counts and times every request the wire server answers: it is the
// server's RequestObserver, called from readers and from whoever steps the node, so
// its series are the client library's (safe for concurrent use). The label values are
// resolved once per API, version and error code and kept, so a request costs two map
// reads under a read lock rather than the library's label hashing.
type requestMetrics struct {
	total   *prometheus.CounterVec   // sluice_requests_total{api,version,error}
	latency *prometheus.HistogramVec // sluice_request_duration_seconds{api}

	mu       sync.RWMutex
	counters map[requestLabel]prometheus.Counter
	timers   map[int16]prometheus.Observer
}

type requestLabel struct {
	key, version, code int16
}

var _ kafkanet.RequestObserver = (*requestMetrics)(nil)

func newRequestMetrics() *requestMetrics {
	return &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_requests_total",
			Help: "Requests answered, by API, version and the response's first error code " +
				"(NONE when it has none).",
		}, []string{"api", "version", "error"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sluice_request_duration_seconds",
			Help: "Time from a request's decoding to its answer, by API (a Fetch's long " +
				"poll included).",
			// 100 µs to ~15 s.
			Buckets: prometheus.ExponentialBuckets(100e-6, 2.5, 14),
		}, []string{"api"}),
		counters: map[requestLabel]prometheus.Counter{},
		timers:   map[int16]prometheus.Observer{},
	}
}

// RequestDone counts and times one answered request.
func (m *requestMetrics) RequestDone(key, version int16, resp kmsg.Response,
	elapsed time.Duration) {
	l := requestLabel{key: key, version: version, code: responseError(resp)}
	m.mu.RLock()
	c, okC := m.counters[l]
	t, okT := m.timers[key]
	m.mu.RUnlock()
	if !okC || !okT {
		c, t = m.resolve(l)
	}
	c.Inc()
	t.Observe(elapsed.Seconds())
}

func (m *requestMetrics) resolve(l requestLabel) (prometheus.Counter, prometheus.Observer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	api := apiName(l.key)
	c := m.counters[l]
	if c == nil {
		c = m.total.WithLabelValues(api, strconv.Itoa(int(l.version)), errorName(l.code))
		m.counters[l] = c
	}
	t := m.timers[l.key]
	if t == nil {
		t = m.latency.WithLabelValues(api)
		m.timers[l.key] = t
	}
	return c, t
}

func apiName(key int16) string {
	if name := kmsg.NameForKey(key); name != "" && name != "Unknown" {
		return name
	}
	return "Unknown" + strconv.Itoa(int(key))
}

// errorName is the Kafka name of an error code: UNKNOWN_TOPIC_OR_PARTITION, NONE for 0.
func errorName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	var ke *kerr.Error
	if err := kerr.ErrorForCode(code); errors.As(err, &ke) && ke.Code == code {
		return ke.Message
	}
	return "CODE_" + strconv.Itoa(int(code))
}

// responseError is the first error code a response carries: its top-level one, else
// the first of its topics and partitions in order; 0 when it has none (or no
// response is sent).
func responseError(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case nil:
		return 0
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if c := r.Topics[i].Partitions[j].ErrorCode; c != 0 {
					return c
				}
			}
		}
		return 0
	case *kmsg.FetchResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if c := r.Topics[i].Partitions[j].ErrorCode; c != 0 {
					return c
				}
			}
		}
		return 0
	}
	return firstErrorCode(reflect.ValueOf(resp))
}

// firstErrorCode walks a kmsg response (structs, pointers, slices of structs) for its
// first non-zero int16 field named ErrorCode, a struct's own before its children's.
func firstErrorCode(v reflect.Value) int16 {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return firstErrorCode(v.Elem())
	case reflect.Struct:
		if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 &&
			f.Int() != 0 {
			return int16(f.Int())
		}
		for i := range v.NumField() {
			if c := firstErrorCode(v.Field(i)); c != 0 {
				return c
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			return 0
		}
		for i := range v.Len() {
			if c := firstErrorCode(v.Index(i)); c != 0 {
				return c
			}
		}
	}
	return 0
}
