package runtime_test

import (
	"context"
	"encoding/binary"
	"io"
	stdnet "net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/runtime"
)

// startNode runs an in-process node on a free loopback port over dir (a new temporary
// directory when empty) and closes it when the test ends.
func startNode(t *testing.T, dir string) *runtime.Node {
	t.Helper()
	return startNodeAt(t, dir, freeAddr(t))
}

// startNodeAt is startNode on a given listen address.
func startNodeAt(t *testing.T, dir, addr string) *runtime.Node {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	n := runtime.NewNode(runtime.Options{
		ListenAddr:   addr,
		DataDir:      dir,
		Logger:       zaptest.NewLogger(t),
		DrainTimeout: 2 * time.Second,
	})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

// startNodeB is startNode for benchmarks (no per-test logger: logs would dominate).
func startNodeB(b *testing.B) *runtime.Node {
	b.Helper()
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: b.TempDir()})
	require.NoError(b, n.Start(context.Background()))
	b.Cleanup(func() { require.NoError(b, n.Close()) })
	return n
}

// newClient is a kgo client with short timeouts, closed when the test ends.
func newClient(t *testing.T, n *runtime.Node, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(n.Addr()),
		kgo.DialTimeout(2 * time.Second),
		kgo.RetryTimeout(10 * time.Second),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.MetadataMinAge(50 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func createTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := kadm.NewClient(cl).CreateTopics(testCtx(t, 10*time.Second), partitions, 1, nil, topic)
	require.NoError(t, err)
	require.NoError(t, resp[topic].Err)
}

// rawConn is a plain TCP connection for sending hand-made frames.
func rawConn(t *testing.T, n *runtime.Node) stdnet.Conn {
	t.Helper()
	nc, err := stdnet.DialTimeout("tcp", n.Addr(), 2*time.Second)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// frame encodes req as a request frame (header v1, or v2 when req is flexible).
func frame(corr int32, req kmsg.Request) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 3)
	b = append(b, "raw"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readResponse reads one response frame into resp (a non-flexible version, so no header
// tags) and returns its correlation id.
func readResponse(t *testing.T, nc stdnet.Conn, resp kmsg.Response) int32 {
	t.Helper()
	var size [4]byte
	_, err := io.ReadFull(nc, size[:])
	require.NoError(t, err)
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(nc, body)
	require.NoError(t, err)
	require.NoError(t, resp.ReadFrom(body[4:]))
	return int32(binary.BigEndian.Uint32(body))
}

// requireClosedByServer asserts the node closed nc.
func requireClosedByServer(t *testing.T, nc stdnet.Conn) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := nc.Read(make([]byte, 1))
	require.Error(t, err)
	if ne, ok := err.(stdnet.Error); ok && ne.Timeout() {
		t.Fatal("the node did not close the connection")
	}
}
