package main

// `sluice node`: run one node until SIGINT or SIGTERM.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/lifecycle"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
	"github.com/sluicemq/sluice/settings"
)

func init() {
	register("node", command{summary: "run a Sluice node", run: runNode})
}

const nodeSynopsis = "sluice node [--id N] [--listen HOST:PORT] [--advertise HOST:PORT] " +
	"[--listeners NAME://HOST:PORT,...] [--advertised-listeners NAME://HOST:PORT,...] " +
	"[--data DIR] [--config FILE] [--voters ID@HOST:PORT,...] [--controller-listen HOST:PORT] " +
	"[--http-listen HOST:PORT] [--rack R] [--console-admin] [--log-format console|json] " +
	"[--log-level debug|info|warn|error]"

// nodeSettings are the settings of `sluice node` that are not broker.Config: they come
// from flags, or from Kafka's names for them in the config file.
type nodeSettings struct {
	listen, advertise, data string
	lst                     listenerSettings  // listeners, protocols, ssl.* (listeners.go)
	net                     kafkanet.Options  // connection and request limits
	maxOpenFiles            int               // sluice.log.max.open.files (0: derived)
	ctl                     controller.Config // broker.session.timeout.ms, ...
	rack                    string            // broker.rack
	slowRequest             time.Duration     // sluice.request.slow.log.ms
}

func runNode(args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := newFlagSet("sluice node", nodeSynopsis, stderr)
	id := fs.Int("id", 1, "node id (node.id)")
	listen := fs.String("listen", "127.0.0.1:9092", "`HOST:PORT` to accept Kafka clients on")
	advertise := fs.String("advertise", "", "`HOST:PORT` clients are told to connect to "+
		"(default: the listen address)")
	listeners := fs.String("listeners", "", "named listeners, `NAME://HOST:PORT,...` "+
		"(Kafka's listeners; replaces --listen; docs/security.md)")
	advertisedListeners := fs.String("advertised-listeners", "", "addresses clients are "+
		"told per listener, `NAME://HOST:PORT,...` (replaces --advertise)")
	data := fs.String("data", "./data", "`DIR` for the partition logs and node state")
	configFile := fs.String("config", "", "server.properties style `FILE` of key=value settings")
	voters := fs.String("voters", "", "the metadata quorum, `ID@HOST:PORT,...` (raft "+
		"transport addresses; default: none, the node keeps its own metadata log)")
	controllerListen := fs.String("controller-listen", "", "`HOST:PORT` for this node's "+
		"quorum transport (default: its address in --voters; required for a node outside "+
		"--voters, which joins as a non-voter)")
	httpListen := fs.String("http-listen", "127.0.0.1:9644", "`HOST:PORT` for /healthz, "+
		"/readyz, /metrics and the web console (\"\": none)")
	rack := fs.String("rack", "", "the `RACK` this node is in (broker.rack): replicas of a "+
		"partition go to different racks")
	consoleAdmin := fs.Bool("console-admin", false, "let the web console create topics, "+
		"alter configs and reset group offsets (default: read-only)")
	logFormat := fs.String("log-format", "json", "`FORMAT` of the log on stderr: json (one "+
		"object per line, for collectors) or console (for people)")
	logLevel := fs.String("log-level", "info", "least `LEVEL` logged: debug, info, warn or error")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE` "+
		"(for go tool pprof)")
	if _, err := parseCommand(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printSettings(stderr)
			return 0
		}
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	cfg := broker.DefaultConfig()
	ns := nodeSettings{listen: *listen, advertise: *advertise, data: *data,
		ctl: controller.DefaultConfig(), slowRequest: time.Second}
	if *configFile != "" {
		if err := loadConfigFile(*configFile, &cfg, &ns); err != nil {
			fmt.Fprintf(stderr, "sluice node: %v\n", err)
			return 1
		}
		if err := ns.ctl.Check(); err != nil {
			fmt.Fprintf(stderr, "sluice node: config file %s: %v\n", *configFile, err)
			return 1
		}
	}
	// The command line beats the config file, which beats the defaults.
	if set["id"] {
		if *id < 0 || *id > 1<<31-1 {
			return usageNode(fs, "--id must be between 0 and 2147483647, got %d", *id)
		}
		cfg.NodeID = int32(*id)
	}
	if set["listen"] {
		ns.listen, ns.lst.listeners = *listen, ""
	}
	if set["advertise"] {
		ns.advertise, ns.lst.advertised = *advertise, ""
	}
	if set["listeners"] {
		if set["listen"] {
			return usageNode(fs, "give --listen or --listeners, not both")
		}
		ns.lst.listeners = *listeners
	}
	if set["advertised-listeners"] {
		if set["advertise"] {
			return usageNode(fs, "give --advertise or --advertised-listeners, not both")
		}
		ns.lst.advertised = *advertisedListeners
	}
	if set["data"] {
		ns.data = *data
	}
	if set["rack"] {
		ns.rack = *rack
	}
	setGCPercent(os.Getenv)
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "sluice node: %v\n", err)
			return 1
		}
		defer stopProfile()
	}
	lg, err := newNodeLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return usageNode(fs, "%v", err)
	}
	ls, interBroker, err := ns.lst.build(ns.listen, ns.advertise)
	if err != nil {
		fmt.Fprintf(stderr, "sluice node: %v\n", err)
		return 1
	}
	opts := runtime.Options{ListenAddr: ns.listen, AdvertisedAddr: ns.advertise,
		Listeners: ls, InterBrokerListener: interBroker, DataDir: ns.data, Config: cfg,
		Logger: lg, Net: ns.net, SlowRequest: ns.slowRequest,
		MaxOpenLogFiles: ns.maxOpenFiles, ControllerListen: *controllerListen,
		HTTPListen: *httpListen, Controller: ns.ctl, Rack: ns.rack,
		ConsoleAdmin: *consoleAdmin}
	if opts.ControllerTLS, err = ns.lst.controllerTLS(); err != nil {
		fmt.Fprintf(stderr, "sluice node: %v\n", err)
		return 1
	}
	if *voters != "" {
		vs, err := raftmeta.ParseVoters(*voters)
		if err != nil {
			return usageNode(fs, "--voters: %v", err)
		}
		opts.Voters = vs
		if msg := voterListenMismatch(vs, cfg.NodeID, *controllerListen); msg != "" {
			return usageNode(fs, "%s", msg)
		}
		if !slices.ContainsFunc(vs, func(v raftmeta.Voter) bool { return v.ID == cfg.NodeID }) &&
			*controllerListen == "" {
			return usageNode(fs, "node %d is not one of --voters: it joins the quorum as a "+
				"non-voter and needs --controller-listen HOST:PORT (its own quorum transport, "+
				"which the voters reach)", cfg.NodeID)
		}
	} else if *controllerListen != "" {
		return usageNode(fs, "--controller-listen needs --voters")
	} else if ns.lst.controller != "" {
		return usageNode(fs, "controller.listener.names is the metadata quorum's "+
			"transport: it needs --voters")
	}
	return serveNode(opts, stderr, nil)
}

func usageNode(fs *flag.FlagSet, format string, args ...any) int {
	_ = usageErr(fs, format, args...)
	return 2
}

// serveNode runs the node until a signal, then shuts it down gracefully. A signal
// during start ends the start (opening the node state gives up at once). A second
// signal during shutdown kills the process (the default handling is restored).
// started, when set, is called once the node serves.
func serveNode(opts runtime.Options, stderr io.Writer, started func(*runtime.Node)) int {
	lg := opts.Logger
	defer func() { _ = lg.Sync() }()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fatal := make(chan error, 1)
	opts.OnFatal = func(err error) {
		select {
		case fatal <- err:
		default:
		}
	}
	node := runtime.NewNode(opts)
	startErr := make(chan error, 1)
	go func() { startErr <- node.Start(ctx) }()
	var err error
	select {
	case err = <-startErr:
	case <-ctx.Done():
		stop()
		lg.Info("signal received while starting, stopping (a second signal kills the node)")
		if err = <-startErr; err == nil || errors.Is(err, context.Canceled) {
			err = errors.New("start interrupted by a signal")
			_ = node.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice node: %v\n", err)
		return 1
	}
	if started != nil {
		started(node)
	}
	select {
	case <-ctx.Done():
		stop()
		lg.Info("signal received, shutting down (a second signal kills the node)")
	case err := <-fatal:
		if errors.Is(err, lifecycle.ErrNodeIDInUse) {
			fmt.Fprintf(stderr, "sluice node: %v\n", err) // a restart would not help
		} else {
			fmt.Fprintf(stderr, "sluice node: %v; restart the node\n", err)
		}
		_ = node.Close()
		return 1
	}
	if err := node.Close(); err != nil {
		fmt.Fprintf(stderr, "sluice node: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// loadConfigFile applies a server.properties style file: key=value lines, '#' or '!'
// comments, blank lines ignored. Kafka's listener and directory names set the node's
// address and data directory; everything else goes through broker.Config.Set.
func loadConfigFile(path string, cfg *broker.Config, ns *nodeSettings) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read config file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		key, value, ok := strings.Cut(text, "=")
		if !ok {
			return fmt.Errorf("config file %s line %d: expected key=value, got %q", path, line, text)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if err := applySetting(key, value, cfg, ns); err != nil {
			return fmt.Errorf("config file %s line %d: %w", path, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

func applySetting(key, value string, cfg *broker.Config, ns *nodeSettings) error {
	if known, err := ns.lst.setPerListener(key, value); known {
		return err
	}
	// The table first: an unknown name or a value outside its range is refused with a
	// message naming the setting and its range, whoever owns it.
	if err := settings.CheckKnown(key, value); err != nil {
		return err
	}
	if known, err := ns.lst.set(key, value); known {
		return err
	}
	var err error
	switch key {
	case "log.dirs", "log.dir":
		if strings.Contains(value, ",") {
			return fmt.Errorf("%s: Sluice keeps its data in one directory, got %q", key, value)
		}
		ns.data = value
	case "sluice.log.max.open.files":
		ns.maxOpenFiles, err = positiveInt(key, value)
	case "broker.rack":
		ns.rack = value
	case "sluice.request.slow.log.ms":
		var v int
		if v, err = strconv.Atoi(value); err != nil || v < 0 {
			return fmt.Errorf("%s: want milliseconds >= 0 (0: off), got %q", key, value)
		}
		ns.slowRequest = time.Duration(v) * time.Millisecond
	default:
		var known bool
		if known, err = ns.net.Set(key, value); !known {
			if known, err = ns.ctl.Set(key, value); !known {
				err = cfg.Set(key, value)
			}
		}
	}
	return err
}

func positiveInt(key, value string) (int, error) {
	v, err := strconv.Atoi(value)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("%s: must be a positive number, got %q", key, value)
	}
	return v, nil
}

// printSettings lists what a config file may contain (for `sluice node -h`).
func printSettings(w io.Writer) {
	fmt.Fprintln(w, "\nconfig file settings (key=value; `sluice config list` shows each one's "+
		"type, default, range and meaning):")
	for _, st := range settings.All() {
		fmt.Fprintf(w, "  %s\n", st.Name)
	}
}

// newNodeLogger is a production-style zap logger writing to stderr: JSON (one object per
// line) or console (aligned text for people), from level up, sampled so that a flood of
// bad connections cannot drown the log.
func newNodeLogger(stderr io.Writer, format, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil || lvl > zapcore.ErrorLevel {
		return nil, fmt.Errorf("--log-level: want debug, info, warn or error, got %q", level)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	var encoder zapcore.Encoder
	switch format {
	case "json":
		encoder = zapcore.NewJSONEncoder(enc)
	case "console":
		enc.EncodeLevel = zapcore.CapitalLevelEncoder
		encoder = zapcore.NewConsoleEncoder(enc)
	default:
		return nil, fmt.Errorf("--log-format: want json or console, got %q", format)
	}
	core := zapcore.NewCore(encoder, zapcore.Lock(zapcore.AddSync(stderr)), lvl)
	core = zapcore.NewSamplerWithOptions(core, time.Second, 100, 100)
	return zap.New(core, zap.AddCaller(), zap.AddStacktrace(zap.ErrorLevel)), nil
}

// startCPUProfile profiles the process until the returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cannot create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot start CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// voterListenMismatch says why a voter's --controller-listen cannot be its quorum
// transport ("" when it can): the other voters reach it at its --voters address, so the
// port must be that one and the host too, unless it listens on every address. A second
// process started with a voter's --id and its own --controller-listen would otherwise
// run raft as that voter on an address no one sends to.
func voterListenMismatch(vs []raftmeta.Voter, id int32, listen string) string {
	if listen == "" {
		return ""
	}
	i := slices.IndexFunc(vs, func(v raftmeta.Voter) bool { return v.ID == id })
	if i < 0 {
		return ""
	}
	lh, lp, err1 := net.SplitHostPort(listen)
	vh, vp, err2 := net.SplitHostPort(vs[i].Addr)
	wildcard := lh == "" || lh == "0.0.0.0" || lh == "::"
	if err1 != nil || err2 != nil || lp != vp || (lh != vh && !wildcard) {
		return fmt.Sprintf("node %d is voter %d@%s in --voters, but --controller-listen is "+
			"%s: a voter's quorum transport listens where --voters says the others reach "+
			"it (is another node already running with --id %d?)", id, id, vs[i].Addr,
			listen, id)
	}
	return ""
}

// nodeGCPercent is the garbage collector's target a node runs with unless GOGC is set:
// twice Go's default. A node's heap is mostly short-lived request and fetch buffers;
// at Go's 100 the collector and the scavenger returning freed pages to the kernel took
// about a sixth of a replicating node's CPU, and at 200 three nodes on two cores took
// 17 % less CPU for the same records and produced ~18 % more acks=all writes a second,
// for ~20 MB more peak RSS each (docs/benchmarks.md, "Garbage collection").
const nodeGCPercent = 200

// setGCPercent applies nodeGCPercent unless the environment sets GOGC, which the Go
// runtime has read already and which wins.
func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(nodeGCPercent)
	}
}
