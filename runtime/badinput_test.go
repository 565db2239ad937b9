package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/runtime"
)

// rawProduce sends one produce request for a single partition through kgo's raw
// request path (so framing is real) and returns that partition's answer.
func rawProduce(t *testing.T, cl *kgo.Client, topic string, part int32,
	records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = part, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	require.NoError(t, err)
	return resp.Topics[0].Partitions[0]
}

// TestNodeBadInputGetsKafkaErrorsAndLosesNothing sends an oversized batch, a batch with
// a bad CRC and a produce to an unknown topic, each between good writes, and requires
// the right error code for each and every good record intact afterwards.
func TestNodeBadInputGetsKafkaErrorsAndLosesNothing(t *testing.T) {
	n := startNode(t, "")
	cl := newClient(t, n, kgo.AllowAutoTopicCreation())
	_, err := kadm.NewClient(cl).CreateTopic(testCtx(t, 10*time.Second), 1, 1,
		map[string]*string{"max.message.bytes": kmsg.StringPtr("2048")}, "bad")
	require.NoError(t, err)
	good := func(v string) []byte {
		return batch.Build([]batch.KV{{Value: []byte(v)}}, batch.NoProducer, time.Now().UnixMilli())
	}
	require.Zero(t, rawProduce(t, cl, "bad", 0, good("one")).ErrorCode)

	big := batch.Build([]batch.KV{{Value: make([]byte, 4096)}}, batch.NoProducer, 1)
	require.Equal(t, kerr.MessageTooLarge.Code, rawProduce(t, cl, "bad", 0, big).ErrorCode)

	corrupt := good("two")
	corrupt[len(corrupt)-1] ^= 0xff
	require.Equal(t, kerr.CorruptMessage.Code, rawProduce(t, cl, "bad", 0, corrupt).ErrorCode)

	require.Equal(t, kerr.UnknownTopicOrPartition.Code,
		rawProduce(t, cl, "bad", 5, good("x")).ErrorCode)
	require.Zero(t, rawProduce(t, cl, "bad", 0, good("three")).ErrorCode)

	cons := newClient(t, n, kgo.ConsumeTopics("bad"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	ctx := testCtx(t, 10*time.Second)
	for len(got) < 2 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	require.Equal(t, []string{"one", "three"}, got, "only the good records, at offsets 0 and 1")
}

// TestNodeRetentionDeletesOldSegments writes enough to roll many small segments with
// retention.bytes set, and waits (bounded) for the retention pass to raise the log
// start offset and delete segment files.
func TestNodeRetentionDeletesOldSegments(t *testing.T) {
	dir := t.TempDir()
	cfg := broker.DefaultConfig()
	require.NoError(t, cfg.Set("log.retention.check.interval.ms", "100"))
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: dir,
		Config: cfg, Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })

	cl := newClient(t, n)
	adm := kadm.NewClient(cl)
	_, err := adm.CreateTopic(testCtx(t, 10*time.Second), 1, 1, map[string]*string{
		"segment.bytes": kmsg.StringPtr("4096"), "retention.bytes": kmsg.StringPtr("8192"),
	}, "ret")
	require.NoError(t, err)
	produceKeyed(t, cl, "ret", 200, 1) // ~200 batches of ~70 bytes: many segments
	for i := 0; i < 50; i++ {
		require.Zero(t, rawProduce(t, cl, "ret", 0, batch.Build([]batch.KV{{Value: make([]byte, 900)}},
			batch.NoProducer, time.Now().UnixMilli())).ErrorCode)
	}
	segDir := filepath.Join(dir, "logs", "ret-0")
	countSegs := func() int {
		es, err := os.ReadDir(segDir)
		require.NoError(t, err)
		c := 0
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".log") {
				c++
			}
		}
		return c
	}
	var start int64
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		offs, err := adm.ListStartOffsets(testCtx(t, 5*time.Second), "ret")
		require.NoError(t, err)
		o, _ := offs.Lookup("ret", 0)
		start = o.Offset
		if start > 0 && countSegs() <= 4 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Greater(t, start, int64(0), "retention never advanced the log start offset")
	require.LessOrEqual(t, countSegs(), 4, "old segment files remain")
	ends, err := adm.ListEndOffsets(testCtx(t, 5*time.Second), "ret")
	require.NoError(t, err)
	end, _ := ends.Lookup("ret", 0)
	require.Equal(t, int64(250), end.Offset, "retention never touches the end of the log")
}
