package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// Bounds of the console's API (docs/limits.md, "Console").
const (
	RequestTimeout   = 5 * time.Second // Kafka calls of one API request
	MaxInFlight      = 8               // concurrent API requests; more are 503
	MaxTopics        = 1000            // topics listed
	MaxPartitions    = 1000            // partitions shown per topic
	MaxGroups        = 500             // groups listed
	MaxLagGroups     = 100             // groups whose lag one answer computes
	MaxRecords       = 100             // records one message read returns
	DefaultRecords   = 20              //
	MaxReadBytes     = 1 << 20         // bytes of records one message read returns
	DefaultReadBytes = 256 << 10       //
	PreviewBytes     = 4 << 10         // bytes of a key or value shown as text
	HexBytes         = 1 << 10         // bytes of a key or value shown as hex
	MaxParamLen      = 256             // characters of one query parameter
	MaxBodyBytes     = 64 << 10        // body of an admin request
)

//go:embed web
var webFS embed.FS

// Options configure a Console.
type Options struct {
	// KafkaAddr is the node's own Kafka listener (host:port), the client's seed.
	KafkaAddr string
	// NodeID is the node serving the console, marked in the broker list.
	NodeID int32
	// Admin enables the actions that change the cluster (--console-admin).
	Admin bool
	// Gatherer is the node's Prometheus registry, read for node-local facts. May be nil.
	Gatherer prometheus.Gatherer
	// Logger receives the console's logs. Default: none.
	Logger *zap.Logger
}

// Console serves the pages and the JSON API. Close it when the HTTP server stops.
type Console struct {
	opts  Options
	lg    *zap.Logger
	cl    *kgo.Client
	adm   *kadm.Client
	slots chan struct{}
	mux   *http.ServeMux
}

// New returns a console whose client connects to opts.KafkaAddr on first use.
func New(opts Options) (*Console, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(opts.KafkaAddr), kgo.ClientID("sluice-console"),
		kgo.DialTimeout(2*time.Second), kgo.RetryTimeout(RequestTimeout),
		kgo.MetadataMinAge(250*time.Millisecond), kgo.RequestRetries(2))
	if err != nil {
		return nil, err
	}
	c := &Console{opts: opts, lg: opts.Logger, cl: cl, adm: kadm.NewClient(cl),
		slots: make(chan struct{}, MaxInFlight), mux: http.NewServeMux()}
	c.routes()
	return c, nil
}

// Close closes the console's Kafka client.
func (c *Console) Close() { c.cl.Close() }

// Handler serves the console; mount it on "/".
func (c *Console) Handler() http.Handler { return c.mux }

func (c *Console) routes() {
	sub, _ := fs.Sub(webFS, "web")
	static := http.FileServerFS(sub)
	c.mux.Handle("GET /static/", secure(http.StripPrefix("/static/", static)))
	c.mux.Handle("GET /{$}", secure(http.HandlerFunc(func(w http.ResponseWriter,
		r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/"
		static.ServeHTTP(w, r2)
	})))
	c.api("GET /api/info", c.info)
	c.api("GET /api/cluster", c.cluster)
	c.api("GET /api/topics", c.topics)
	c.api("GET /api/topics/{topic}", c.topic)
	c.api("GET /api/topics/{topic}/messages", c.messages)
	c.api("GET /api/groups", c.groups)
	c.api("GET /api/groups/{group}", c.group)
	c.api("GET /api/stats", c.stats)
	c.api("POST /api/admin/topics", c.admin(c.createTopic))
	c.api("POST /api/admin/topics/{topic}/configs", c.admin(c.alterConfigs))
	c.api("POST /api/admin/groups/{group}/offsets", c.admin(c.resetOffsets))
	c.mux.Handle("/api/", secure(http.HandlerFunc(func(w http.ResponseWriter,
		_ *http.Request) {
		writeErr(w, errf(http.StatusNotFound, "no such API endpoint"))
	})))
}

// secure adds the headers every answer carries: no framing, no sniffing, and scripts
// and styles only from the console itself.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; "+
			"frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// apiFunc answers one API request with a value to encode as JSON, or an error (an
// *httpError, a Kafka error or a deadline).
type apiFunc func(ctx context.Context, r *http.Request) (any, error)

func (c *Console) api(pattern string, f apiFunc) {
	c.mux.Handle(pattern, secure(http.HandlerFunc(func(w http.ResponseWriter,
		r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		default:
			writeErr(w, errf(http.StatusServiceUnavailable,
				"too many console requests in flight (%d); retry shortly", MaxInFlight))
			return
		}
		if err := checkParams(r); err != nil {
			writeErr(w, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), RequestTimeout)
		defer cancel()
		v, err := f(ctx, r)
		if err != nil {
			he := c.classify(err)
			if he.Code >= 500 {
				c.lg.Warn("console request failed", zap.String("path", r.URL.Path),
					zap.Int("status", he.Code), zap.Error(err))
			}
			writeErr(w, he)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})))
}

// httpError is an answer other than 200, with a sentence for the person reading it.
type httpError struct {
	Code int    `json:"-"`
	Msg  string `json:"error"`
}

func (e *httpError) Error() string { return e.Msg }

func errf(code int, format string, args ...any) *httpError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &httpError{Code: code, Msg: msg}
}

func writeErr(w http.ResponseWriter, e *httpError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.Code)
	_ = json.NewEncoder(w).Encode(e)
}

// classify turns an error into the answer to send.
func (c *Console) classify(err error) *httpError {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he
	case errors.Is(err, context.DeadlineExceeded):
		return errf(http.StatusGatewayTimeout, "the broker did not answer within %s",
			RequestTimeout)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return errf(http.StatusNotFound, "%v", err)
	case errors.Is(err, kerr.GroupIDNotFound):
		return errf(http.StatusNotFound, "%v", err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		if ke.Retriable { // the broker cannot answer now (no leader, no coordinator)
			return errf(http.StatusServiceUnavailable, "%v; retry shortly", err)
		}
		// A Kafka error answers a well-formed request the broker refused.
		return errf(http.StatusBadRequest, "%v", err)
	}
	return errf(http.StatusBadGateway, "reading from the broker: %v", err)
}

// checkParams bounds every query parameter, whatever the endpoint.
func checkParams(r *http.Request) *httpError {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return errf(http.StatusBadRequest, "malformed query string: %v", err)
	}
	for k, vs := range q {
		if len(k) > MaxParamLen || len(vs) > 1 {
			return errf(http.StatusBadRequest, "parameter %.40q is too long or repeated", k)
		}
		for _, v := range vs {
			if len(v) > MaxParamLen {
				return errf(http.StatusBadRequest,
					"parameter %q is longer than %d characters", k, MaxParamLen)
			}
		}
	}
	return nil
}

// Kafka's own rule for topic names (legal characters, at most 249 of them); a group
// name the console accepts is any printable text of at most 249 bytes.
var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

func topicParam(r *http.Request) (string, *httpError) {
	t := r.PathValue("topic")
	if !topicName.MatchString(t) || t == "." || t == ".." {
		return "", errf(http.StatusBadRequest, "invalid topic name %.60q: a topic name is 1 "+
			"to 249 characters of a-z, A-Z, 0-9, '.', '_' and '-'", t)
	}
	return t, nil
}

func groupParam(r *http.Request) (string, *httpError) {
	g := r.PathValue("group")
	if g == "" || len(g) > 249 || strings.ContainsFunc(g, func(r rune) bool {
		return r < 0x20 || r == 0x7f || r == 0xfffd
	}) {
		return "", errf(http.StatusBadRequest, "invalid group id %.60q: 1 to 249 "+
			"printable characters", g)
	}
	return g, nil
}

// intParam parses an optional integer query parameter within [lo, hi]; def when absent.
func intParam(r *http.Request, name string, lo, hi, def int64) (int64, *httpError) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, errf(http.StatusBadRequest, "%s must be an integer from %d to %d, got %.40q",
			name, lo, hi, s)
	}
	return v, nil
}

func (c *Console) info(context.Context, *http.Request) (any, error) {
	return map[string]any{"admin": c.opts.Admin, "nodeId": c.opts.NodeID,
		"limits": map[string]any{"maxRecords": MaxRecords, "maxReadBytes": MaxReadBytes,
			"defaultRecords": DefaultRecords, "defaultReadBytes": DefaultReadBytes}}, nil
}
