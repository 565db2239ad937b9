package e2e

import (
	"io"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// kafka-go's Client.Fetch sends a sessionless fetch (SessionEpoch -1); it was answered
// FETCH_SESSION_ID_NOT_FOUND (issue 6 item 7). Kafka serves it as a full fetch.
func TestKafkaGoClientFetchIsServed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	n := startNode(t, "")
	cl := &kafka.Client{Addr: kafka.TCP(n.addr), Timeout: 10 * time.Second}
	resp, err := cl.CreateTopics(ctx(t, 10*time.Second), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: "kafkago-fetch",
			NumPartitions: kafkagoPartitions, ReplicationFactor: 1}}})
	require.NoError(t, err)
	require.NoError(t, resp.Errors["kafkago-fetch"])
	kafkagoWrite(t, n.addr, "kafkago-fetch", kafka.RequireAll, 0, 10, 4)
	got := 0
	for p := range kafkagoPartitions {
		resp, err := cl.Fetch(ctx(t, 10*time.Second), &kafka.FetchRequest{
			Topic: "kafkago-fetch", Partition: p, Offset: 0, MinBytes: 1, MaxBytes: 1 << 20,
			MaxWait: 100 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, resp.Error)
		for {
			_, err := resp.Records.ReadRecord()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			got++
		}
	}
	require.Equal(t, 10, got)
}
