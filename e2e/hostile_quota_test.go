package e2e

import (
	"crypto/rand"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// Client quotas against a greedy client (docs/limits.md, "Client quotas"): four
// connections with client id "hostile" write Produce requests back to back and never
// wait for the ThrottleMillis they are told. They share the client id's 100 KiB/s
// quota; the node's mutes hold them near it, and a well-behaved client is served
// meanwhile.
func TestHostileClientIgnoringThrottlesIsHeldToItsQuota(t *testing.T) {
	const quota = 100 << 10
	const run = 3 * time.Second
	// Two windows of 1 s: a first burst is one second's worth (Kafka's 11 windows would
	// let it be ten, longer than the test).
	n := startNodeWith(t, "quota.window.num=2")
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	c := ctx(t, 20*time.Second)
	_, err = adm.CreateTopic(c, 1, 1, nil, "greedy")
	require.NoError(t, err)
	res, err := adm.AlterClientQuotas(c, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("hostile")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}},
	}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)

	value := make([]byte, 10<<10)
	_, _ = rand.Read(value)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 8, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "greedy"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch.Build([]batch.KV{{Value: value}}, batch.NoProducer,
		time.Now().UnixMilli())
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile")).AppendRequest(nil,
		req, 1)

	deadline := time.Now().Add(run)
	var acked, throttled atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		nc, err := net.DialTimeout("tcp", n.addr, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { _ = nc.Close() })
		require.NoError(t, nc.SetDeadline(deadline.Add(time.Second)))
		wg.Add(2)
		go func() { // writes, whatever the answers say
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := nc.Write(frame); err != nil {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			defer nc.Close()
			for time.Now().Before(deadline) {
				var size [4]byte
				if _, err := readFull(nc, size[:]); err != nil {
					return
				}
				body := make([]byte, binary.BigEndian.Uint32(size[:]))
				if _, err := readFull(nc, body); err != nil {
					return
				}
				resp := kmsg.NewPtrProduceResponse()
				resp.Version = 8
				if resp.ReadFrom(body[4:]) != nil || len(resp.Topics) != 1 {
					return
				}
				if resp.ThrottleMillis > 0 {
					throttled.Add(1)
				}
				if time.Now().Before(deadline) && resp.Topics[0].Partitions[0].ErrorCode == 0 {
					acked.Add(int64(len(rp.Records)))
				}
			}
		}()
	}
	n.requireServes("probe", 2*time.Second)
	wg.Wait()
	t.Logf("4 connections ignoring throttles: %.0f KiB/s together (quota %d KiB/s), "+
		"%d throttled answers", float64(acked.Load())/run.Seconds()/1024, quota>>10,
		throttled.Load())
	require.Positive(t, throttled.Load())
	require.Less(t, float64(acked.Load()), 3*quota*run.Seconds(),
		"the greedy client is held near its quota")
	n.requireWithin(300<<20, 200)
}
