package runtime

import (
	"context"
	"errors"
	"fmt"
	stdnet "net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/console"
)

// The node's HTTP listener for operators (issue 9): /healthz, /readyz and /metrics in
// Prometheus text format. Every bound below is fixed: a scrape or a probe needs little,
// and anything larger is not an operator's request.
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 10 * time.Second
	httpWriteTimeout      = 30 * time.Second
	httpIdleTimeout       = 60 * time.Second
	httpMaxHeaderBytes    = 16 << 10
	httpMaxScrapes        = 4 // concurrent /metrics requests; more are answered 503
)

// startHTTP listens on Options.HTTPListen (nothing when empty) and serves the
// operator endpoints until the node closes.
func (n *Node) startHTTP() error {
	if n.opts.HTTPListen == "" {
		return nil
	}
	l, err := stdnet.Listen("tcp", n.opts.HTTPListen)
	if err != nil {
		return fmt.Errorf("http listen on %s: %w", n.opts.HTTPListen, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		n.newCollector(), n.syncer.latency)
	reg.MustRegister(n.cleaner.metrics.collectors()...)
	n.registerFlowMetrics(reg)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", n.serveReady)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		MaxRequestsInFlight: httpMaxScrapes, Timeout: httpWriteTimeout / 2,
		ErrorLog: zap.NewStdLog(n.lg.Named("metrics"))}))
	con, err := console.New(console.Options{KafkaAddr: n.clientAddr(),
		NodeID: n.opts.Config.NodeID, Admin: n.opts.ConsoleAdmin, Gatherer: reg,
		Logger: n.lg.Named("console")})
	if err != nil {
		_ = l.Close()
		return fmt.Errorf("start the console: %w", err)
	}
	// The web console and its API (package console); its only writes are admin POSTs.
	mux.Handle("GET /", con.Handler())
	mux.Handle("POST /api/admin/", con.Handler())
	n.http = &http.Server{Handler: mux, ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout: httpReadTimeout, WriteTimeout: httpWriteTimeout,
		IdleTimeout: httpIdleTimeout, MaxHeaderBytes: httpMaxHeaderBytes,
		ErrorLog: zap.NewStdLog(n.lg.Named("http"))}
	n.http.RegisterOnShutdown(con.Close)
	n.httpAddr = l.Addr().String()
	go func() {
		if err := n.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.lg.Error("http listener stopped", zap.Error(err))
		}
	}()
	return nil
}

// stopHTTP closes the listener and the connections on it.
func (n *Node) stopHTTP() {
	if n.http == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = n.http.Shutdown(ctx)
}

// HTTPAddr is where the operator endpoints listen ("" when off).
func (n *Node) HTTPAddr() string { return n.httpAddr }

// serveReady answers 200 once the node serves: recovered, listening, and with a
// metadata quorum, one whose leader is known and with whose controller the node is
// registered and unfenced; 503 with the reason otherwise.
func (n *Node) serveReady(w http.ResponseWriter, _ *http.Request) {
	if why := n.notReady(); why != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(why + "\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

func (n *Node) notReady() string {
	select {
	case <-n.stopping:
		return "stopping"
	default:
	}
	if !n.serving.Load() {
		return "starting"
	}
	if n.quorum != nil {
		if leader, _ := n.quorum.Leader(); leader < 0 {
			return "no metadata quorum leader"
		}
	}
	if st, ok := n.Membership(); ok && (!st.Registered || st.Fenced) {
		return "not registered with the controller, or fenced"
	}
	return ""
}

// collector reads the node's state at each scrape.
type collector struct {
	n                                *Node
	logStart, hwm, logEnd, offline   *prometheus.Desc
	inSync, conns, limitHits, leader *prometheus.Desc
}

func (n *Node) newCollector() *collector {
	tp := []string{"topic", "partition"}
	return &collector{n: n,
		logStart: prometheus.NewDesc("sluice_partition_log_start_offset",
			"First offset still in the partition's log.", tp, nil),
		hwm: prometheus.NewDesc("sluice_partition_high_watermark",
			"Offset below which records are acknowledged and readable.", tp, nil),
		logEnd: prometheus.NewDesc("sluice_partition_log_end_offset",
			"Offset the partition's next record gets.", tp, nil),
		offline: prometheus.NewDesc("sluice_partition_offline",
			"1 when the partition's log is offline after an I/O error.", tp, nil),
		inSync: prometheus.NewDesc("sluice_partition_in_sync_replicas",
			"Replicas in the partition's ISR, the leader included.", tp, nil),
		conns: prometheus.NewDesc("sluice_connections_open",
			"Client connections open now.", nil, nil),
		limitHits: prometheus.NewDesc("sluice_connection_limit_hits_total",
			"Times a connection or request limit was hit (docs/limits.md).",
			[]string{"limit"}, nil),
		leader: prometheus.NewDesc("sluice_quorum_leader",
			"Node id of the metadata quorum's leader (-1: none known).", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.logStart, c.hwm, c.logEnd, c.offline, c.inSync,
		c.conns, c.limitHits, c.leader} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	// The broker is read between steps: whoever steps it holds stepMu (E5).
	n.stepMu.Lock()
	stats := n.b.PartitionStats()
	n.stepMu.Unlock()
	for _, s := range stats {
		l := []string{s.TP.Topic, strconv.Itoa(int(s.TP.Partition))}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
		}
		gauge(c.logStart, float64(s.LogStart))
		gauge(c.hwm, float64(s.HighWatermark))
		gauge(c.logEnd, float64(s.LogEnd))
		gauge(c.offline, boolValue(s.Offline))
		gauge(c.inSync, float64(s.InSync))
	}
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(n.srv.Conns()))
	st := n.srv.Stats()
	for _, h := range []struct {
		name string
		v    uint64
	}{
		{"max.connections", st.ConnsRejected},
		{"max.connections.per.ip", st.ConnsRejectedPerIP},
		{"connections.max.idle.ms", st.IdleClosed},
		{"sluice.request.read.timeout.ms", st.ReadTimeouts},
		{"queued.max.request.bytes", st.RequestBudgetWaits},
		{"queued.max.request.bytes.timeout", st.RequestBudgetTimeouts},
		{"sluice.connection.max.inflight", st.InFlightWaits},
		{"sluice.queued.max.response.bytes", st.ResponseBudgetWaits},
		{"sluice.connection.write.timeout.ms", st.WriteTimeouts},
		{"ssl.handshake", st.TLSHandshakeFailures}, // failed or timed out (docs/security.md)
		{"sasl.authentication", st.SASLFailures},   // wrong credentials, mechanism refused
		{"sluice.sasl.authentication.timeout.ms", st.SASLTimeouts},
		{"sasl.server.max.receive.size", st.SASLOversized},
		{"connections.max.reauth.ms", st.SASLExpired},
	} {
		ch <- prometheus.MustNewConstMetric(c.limitHits, prometheus.CounterValue, float64(h.v),
			h.name)
	}
	leader := int32(-1)
	if n.quorum != nil {
		leader, _ = n.quorum.Leader()
	} else {
		leader = n.opts.Config.NodeID // a node with its own log leads it
	}
	ch <- prometheus.MustNewConstMetric(c.leader, prometheus.GaugeValue, float64(leader))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
