package main

// `sluice dev --nodes N`: a cluster of N `sluice node` processes on 127.0.0.1, for
// trying replication and failover. Each node is a child process of this one (so one of
// them can be killed and restarted by hand), with its data in DIR/node-ID, its Kafka
// listener on base-port+ID-1 and its quorum transport on base-port+100+ID-1.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	stdnet "net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/internal/devcert"
)

// devControllerOffset is how far above the Kafka listeners the quorum transports are.
const devControllerOffset = 100

// devChild is one node process of a dev cluster.
type devChild struct {
	id    int
	kafka string
	args  []string
	cmd   *exec.Cmd
	done  chan struct{}
}

// devClusterArgs are the `sluice node` arguments of node id in a dev cluster of n.
func devClusterArgs(id, n, basePort int, dataDir, logLevel string) []string {
	voters := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i,
			basePort+devControllerOffset+i-1))
	}
	kafka := fmt.Sprintf("127.0.0.1:%d", basePort+id-1)
	return []string{"node", "--id", fmt.Sprint(id), "--listen", kafka, "--advertise", kafka,
		"--controller-listen", fmt.Sprintf("127.0.0.1:%d", basePort+devControllerOffset+id-1),
		"--voters", strings.Join(voters, ","),
		"--data", filepath.Join(dataDir, fmt.Sprintf("node-%d", id)),
		"--http-listen=", "--log-format", "console", "--log-level", logLevel}
}

// devClusterCommand checks the flags of `sluice dev --nodes N` (set: the flags given)
// and runs the cluster.
func devClusterCommand(fs *flag.FlagSet, set map[string]bool, nodes, basePort int, data,
	logLevel string, stdout, stderr io.Writer) int {
	if nodes < 1 || nodes > 9 {
		return usageNode(fs, "--nodes must be between 1 and 9, got %d", nodes)
	}
	for _, f := range []string{"listen", "tls-listen", "tls-dir", "client-auth",
		"http-listen", "sasl", "sasl-listen", "sasl-ssl-listen"} {
		if set[f] {
			return usageNode(fs, "--%s is for a single dev node; not with --nodes", f)
		}
	}
	if last := basePort + devControllerOffset + nodes - 1; basePort < 1 || last > 65535 {
		return usageNode(fs, "--base-port %d: ports %d..%d must be valid", basePort,
			basePort, last)
	}
	if _, err := newNodeLogger(stderr, "console", logLevel); err != nil {
		return usageNode(fs, "%v", err)
	}
	useTLS := fs.Lookup("tls").Value.String() == "true"
	return runDevCluster(nodes, basePort, data, logLevel, useTLS, stdout, stderr)
}

// devQuorumTLS writes a throw-away CA and node certificate under dataDir/tls and the
// config file that makes the nodes' quorum transport mutual TLS with them
// (controller.listener.names; docs/quorum.md, "Transport"), returning its path.
func devQuorumTLS(dataDir string) (string, error) {
	files, err := devcert.Write(filepath.Join(dataDir, "tls"))
	if err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, "quorum-tls.properties")
	text := "# sluice dev --nodes N --tls: the metadata quorum over mutual TLS\n" +
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL\n" +
		"controller.listener.names=CONTROLLER\n" +
		"listener.name.controller.ssl.keystore.location=" + files.Server + "\n" +
		"listener.name.controller.ssl.truststore.location=" + files.CA + "\n"
	return path, os.WriteFile(path, []byte(text), 0o600)
}

// runDevCluster runs n nodes until SIGINT or SIGTERM. data "" keeps the data in a
// temporary directory removed at exit; otherwise it stays, and the same command starts
// the same cluster again.
func runDevCluster(n, basePort int, data, logLevel string, useTLS bool, stdout,
	stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "sluice dev: %v\n", err)
		return 1
	}
	keep := data != ""
	if !keep {
		if data, err = os.MkdirTemp("", "sluice-dev-"); err != nil {
			fmt.Fprintf(stderr, "sluice dev: %v\n", err)
			return 1
		}
		defer os.RemoveAll(data)
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		fmt.Fprintf(stderr, "sluice dev: %v\n", err)
		return 1
	}
	if data, err = filepath.Abs(data); err != nil {
		fmt.Fprintf(stderr, "sluice dev: %v\n", err)
		return 1
	}
	var tlsConfig string
	if useTLS {
		if tlsConfig, err = devQuorumTLS(data); err != nil {
			fmt.Fprintf(stderr, "sluice dev: %v\n", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var out sync.Mutex // one writer at a time on stderr
	children := make([]*devChild, 0, n)
	defer func() { stopDevChildren(children, stderr, &out) }()
	for id := 1; id <= n; id++ {
		ch := &devChild{id: id, kafka: fmt.Sprintf("127.0.0.1:%d", basePort+id-1),
			args: devClusterArgs(id, n, basePort, data, logLevel)}
		if tlsConfig != "" {
			ch.args = append(ch.args, "--config", tlsConfig)
		}
		if err := ch.start(exe, stderr, &out); err != nil {
			fmt.Fprintf(stderr, "sluice dev: node %d: %v\n", id, err)
			return 1
		}
		children = append(children, ch)
	}
	for _, ch := range children {
		if err := ch.awaitListening(ctx, 60*time.Second); err != nil {
			fmt.Fprintf(stderr, "sluice dev: node %d: %v\n", ch.id, err)
			return 1
		}
	}
	if err := awaitDevClusterReady(ctx, children, 60*time.Second); err != nil {
		fmt.Fprintf(stderr, "sluice dev: %v\n", err)
		return 1
	}
	printDevClusterBanner(stdout, exe, children, data, keep)
	if tlsConfig != "" {
		fmt.Fprintf(stdout, "The metadata quorum runs over mutual TLS (%s); the Kafka "+
			"listeners are PLAINTEXT.\n", tlsConfig)
	}
	return superviseDevChildren(ctx, children, stderr, &out)
}

// start runs the child with its log lines prefixed by its node id.
func (ch *devChild) start(exe string, stderr io.Writer, out *sync.Mutex) error {
	ch.cmd = exec.Command(exe, ch.args...)
	setDevChildAttrs(ch.cmd)
	pipe, err := ch.cmd.StderrPipe()
	if err != nil {
		return err
	}
	ch.cmd.Stdout = ch.cmd.Stderr
	if err := ch.cmd.Start(); err != nil {
		return err
	}
	ch.done = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			out.Lock()
			fmt.Fprintf(stderr, "[node %d] %s\n", ch.id, sc.Text())
			out.Unlock()
		}
		_ = ch.cmd.Wait()
		close(ch.done)
	}()
	return nil
}

// awaitListening waits until the child accepts connections, it exits, or ctx ends.
func (ch *devChild) awaitListening(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		select {
		case <-ch.done:
			return fmt.Errorf("exited during start (%v)", ch.cmd.ProcessState)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := stdnet.DialTimeout("tcp", ch.kafka, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline
	}
	return fmt.Errorf("not listening on %s after %v", ch.kafka, bound)
}

// awaitDevClusterReady waits until every node lists every broker in Metadata: each is
// registered with the controller and unfenced, so a topic created next can be placed
// on all of them.
func awaitDevClusterReady(ctx context.Context, children []*devChild, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for _, ch := range children {
		for {
			n, err := metadataBrokerCount(ctx, ch.kafka)
			if err == nil && n == len(children) {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %d lists %d of %d brokers after %v (%v)", ch.id, n,
					len(children), bound, err)
			}
			time.Sleep(100 * time.Millisecond) // polling, bounded by the deadline
		}
	}
	return nil
}

// metadataBrokerCount asks addr alone how many brokers it lists.
func metadataBrokerCount(ctx context.Context, addr string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(2*time.Second),
		kgo.ClientID("sluice-dev"))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // no topics, only the brokers
	resp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return 0, err
	}
	return len(resp.(*kmsg.MetadataResponse).Brokers), nil
}

// superviseDevChildren waits for a signal; a node that exits meanwhile is reported
// (the others keep running). It returns once a signal came or every node exited.
func superviseDevChildren(ctx context.Context, children []*devChild, stderr io.Writer,
	out *sync.Mutex) int {
	exited := make(chan *devChild, len(children))
	for _, ch := range children {
		go func() { <-ch.done; exited <- ch }()
	}
	for left := len(children); left > 0; left-- {
		select {
		case <-ctx.Done():
			return 0
		case ch := <-exited:
			out.Lock()
			fmt.Fprintf(stderr, "sluice dev: node %d exited (%v); the others keep running\n",
				ch.id, ch.cmd.ProcessState)
			out.Unlock()
		}
	}
	fmt.Fprintln(stderr, "sluice dev: every node exited")
	return 1
}

// stopDevChildren asks every running child to stop (SIGTERM: a graceful shutdown) and
// waits for them, killing those still running after 30 s.
func stopDevChildren(children []*devChild, stderr io.Writer, out *sync.Mutex) {
	for _, ch := range children {
		_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(30 * time.Second)
	for _, ch := range children {
		select {
		case <-ch.done:
		case <-deadline:
			out.Lock()
			fmt.Fprintf(stderr, "sluice dev: node %d still running after 30s; killing it\n",
				ch.id)
			out.Unlock()
			_ = ch.cmd.Process.Kill()
			<-ch.done
		}
	}
}

func printDevClusterBanner(w io.Writer, exe string, children []*devChild, data string,
	keep bool) {
	var b strings.Builder
	where := "removed when it stops (Ctrl-C)"
	if keep {
		where = "kept; the same command starts this cluster again"
	}
	fmt.Fprintf(&b, "sluice dev: a cluster of %d nodes on 127.0.0.1; its data (%s) is %s.\n\n",
		len(children), data, where)
	var addrs []string
	for _, ch := range children {
		fmt.Fprintf(&b, "  node %d  %s  pid %d\n", ch.id, ch.kafka, ch.cmd.Process.Pid)
		addrs = append(addrs, ch.kafka)
	}
	bootstrap := strings.Join(addrs, ",")
	fmt.Fprintf(&b, "\nTry:\n  kcat -b %s -L\n", bootstrap)
	fmt.Fprintf(&b, "  sluice topic create demo --partitions 3 --replication-factor %d "+
		"--config min.insync.replicas=%d --bootstrap %s\n", min(3, len(children)),
		min(2, len(children)), bootstrap)
	fmt.Fprintf(&b, "  sluice cluster describe --bootstrap %s\n", bootstrap)
	fmt.Fprintf(&b, "\nKill a node (kill -9 PID) to see its partitions fail over; start it "+
		"again with:\n  %s %s\n", exe, strings.Join(children[0].args, " "))
	fmt.Fprintf(&b, "(for node 1; the other nodes differ in --id, --listen, --advertise, "+
		"--controller-listen and --data)\n")
	_, _ = io.WriteString(w, b.String())
}
