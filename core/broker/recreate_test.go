package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// A topic deleted and created again keeps the new incarnation's data across a
// restart: replaying the metadata must not open the old incarnation's partitions and
// then remove them, which removed the new one's logs (found by the simulator).
func TestRecreatedTopicSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	produceOK(t, h, "t", values("old"))
	h.deleteTopics(deleteReq(maxVersion(kmsg.DeleteTopics), "t"))
	h.mustCreate("t", 1)
	produceOK(t, h, "t", values("a", "b", "c"))
	tp := core.TopicPartition{Topic: "t", Partition: 0}
	require.EqualValues(t, 3, h.b.replicas[tp].HighWatermark())
	removed := len(h.env.removed)

	h.restart()
	require.True(t, h.hosted("t", 0))
	require.EqualValues(t, 3, h.b.replicas[tp].HighWatermark(), "the new topic's data is gone")
	require.Len(t, h.env.removed, removed, "a restart removed a live topic's log")
}
