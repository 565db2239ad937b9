package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// Sarama (IBM/sarama), one of the clients the issue names: it negotiates versions from
// ApiVersions but clamps them to config.Version (set explicitly: older defaults would
// not send v2 record batches), and its idempotent producer keeps one request in flight
// per broker.

const saramaPartitions = 3

func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "sluice-e2e-sarama"
	c.Version = sarama.V3_6_0_0 // v2 record batches, modern group and fetch versions
	c.Net.DialTimeout = 5 * time.Second
	c.Net.ReadTimeout = 10 * time.Second
	c.Net.WriteTimeout = 10 * time.Second
	c.Metadata.Retry.Max = 10
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	return c
}

func TestSaramaIdempotentProducerConsumerGroupAndPartitionConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	n := groupNode(t)
	const topic, total, keys = "sarama", 3000, 16
	brokers := []string{n.addr}

	admin, err := sarama.NewClusterAdmin(brokers, saramaConfig())
	require.NoError(t, err)
	require.NoError(t, admin.CreateTopic(topic,
		&sarama.TopicDetail{NumPartitions: saramaPartitions, ReplicationFactor: 1}, false))
	require.NoError(t, admin.Close())

	start := time.Now()
	saramaProduce(t, brokers, topic, 0, total, keys)
	t.Logf("%d records produced in %v", total, time.Since(start).Round(time.Millisecond))

	t.Run("consumer group commits and a second session resumes", func(t *testing.T) {
		got := saramaGroupConsume(t, brokers, topic, "sarama-g1", total)
		checkKeyedOrder(t, got, total)
		saramaProduce(t, brokers, topic, total, total+50, keys)
		got = saramaGroupConsume(t, brokers, topic, "sarama-g1", 50)
		for _, m := range got {
			v := seqOf(t, m.val)
			require.GreaterOrEqual(t, v, total, "record %s was already committed", m.val)
		}
	})

	t.Run("cluster admin sees the topic and the group's committed offsets", func(t *testing.T) {
		a, err := sarama.NewClusterAdmin(brokers, saramaConfig())
		require.NoError(t, err)
		defer a.Close()
		md, err := a.DescribeTopics([]string{topic})
		require.NoError(t, err)
		require.Equal(t, sarama.ErrNoError, md[0].Err)
		require.Len(t, md[0].Partitions, saramaPartitions)
		groups, err := a.ListConsumerGroups()
		require.NoError(t, err)
		require.Contains(t, groups, "sarama-g1")
		desc, err := a.DescribeConsumerGroups([]string{"sarama-g1"})
		require.NoError(t, err)
		require.Equal(t, "Empty", desc[0].State, "both sessions left the group")
		offs, err := a.ListConsumerGroupOffsets("sarama-g1", nil)
		require.NoError(t, err)
		var committed int64
		for _, parts := range offs.Blocks {
			for _, b := range parts {
				require.Equal(t, sarama.ErrNoError, b.Err)
				committed += b.Offset
			}
		}
		require.Equal(t, int64(total+50), committed, "committed offsets cover every record read")
	})

	t.Run("partition consumer from the oldest offset", func(t *testing.T) {
		c, err := sarama.NewConsumer(brokers, saramaConfig())
		require.NoError(t, err)
		defer c.Close()
		var got []keyedMsg
		for p := int32(0); p < saramaPartitions; p++ {
			got = append(got, saramaReadPartition(t, c, topic, p)...)
		}
		checkKeyedOrder(t, got, total+50)
	})
}

// saramaProduce sends values from..to-1 (key k<i mod keys>) with an idempotent acks=all
// SyncProducer, in a few SendMessages calls so that records travel in real batches.
func saramaProduce(t *testing.T, brokers []string, topic string, from, to, keys int) {
	t.Helper()
	c := saramaConfig()
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Return.Successes = true
	c.Producer.Retry.Max = 5
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	p, err := sarama.NewSyncProducer(brokers, c)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	const chunk = 500
	for start := from; start < to; start += chunk {
		end := min(start+chunk, to)
		msgs := make([]*sarama.ProducerMessage, 0, end-start)
		for i := start; i < end; i++ {
			key := "k" + strconv.Itoa(i%keys)
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic,
				Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(key + "-" + strconv.Itoa(i))})
		}
		require.NoError(t, p.SendMessages(msgs))
		for _, m := range msgs {
			require.GreaterOrEqual(t, m.Offset, int64(0), "acknowledged without an offset")
		}
	}
}

// saramaHandler forwards claimed records to out and marks each as consumed; the
// session commits marked offsets (on its interval and when it ends).
type saramaHandler struct{ out chan<- keyedMsg }

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		select {
		case h.out <- keyedMsg{m.Partition, m.Offset, string(m.Key), string(m.Value)}:
		case <-s.Context().Done():
			return nil
		}
		s.MarkMessage(m, "")
	}
	return nil
}

// saramaGroupConsume joins group, reads until want records arrived, commits them and
// closes the group. Offsets.Initial is the oldest offset, so a missing commit would
// show up as records read again.
func saramaGroupConsume(t *testing.T, brokers []string, topic, group string, want int) []keyedMsg {
	return saramaGroupConsumeCfg(t, brokers, topic, group, want, func(*sarama.Config) {})
}

func saramaGroupConsumeCfg(t *testing.T, brokers []string, topic, group string, want int, tweak func(*sarama.Config)) []keyedMsg {
	t.Helper()
	c := saramaConfig()
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	tweak(c)
	g, err := sarama.NewConsumerGroup(brokers, group, c)
	require.NoError(t, err)
	out := make(chan keyedMsg, 256)
	run, stop := context.WithCancel(ctx(t, 30*time.Second))
	done := make(chan error, 1)
	go func() {
		var err error
		for run.Err() == nil && err == nil {
			err = g.Consume(run, []string{topic}, saramaHandler{out})
		}
		done <- err
	}()
	var got []keyedMsg
	timeout := time.After(25 * time.Second)
	for len(got) < want {
		select {
		case m := <-out:
			got = append(got, m)
		case err := <-done:
			t.Fatalf("consumer group stopped after %d of %d records: %v", len(got), want, err)
		case <-timeout:
			t.Fatalf("consumer group read %d of %d records in 25s", len(got), want)
		}
	}
	stop()
	require.NoError(t, <-done)
	require.NoError(t, g.Close()) // commits what was marked
	return got
}

// saramaReadPartition reads partition p from its oldest offset to its high watermark.
func saramaReadPartition(t *testing.T, c sarama.Consumer, topic string, p int32) []keyedMsg {
	t.Helper()
	pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
	require.NoError(t, err)
	defer pc.Close()
	hwm := pc.HighWaterMarkOffset()
	var got []keyedMsg
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m := <-pc.Messages():
			got = append(got, keyedMsg{m.Partition, m.Offset, string(m.Key), string(m.Value)})
			hwm = pc.HighWaterMarkOffset()
			if m.Offset+1 >= hwm {
				return got
			}
		case err := <-pc.Errors():
			t.Fatalf("partition %d: %v", p, err)
		case <-timeout:
			t.Fatalf("partition %d: read %d records, high watermark %d, in 20s", p, len(got), hwm)
		}
	}
}
