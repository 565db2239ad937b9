package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

// An AlterPartition converts to the controller's message at every version (the ISR
// from NewISR before v3, from NewEpochISR after), and its answer carries the state.
func TestAlterPartitionOnTheWire(t *testing.T) {
	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version, req.BrokerID, req.BrokerEpoch = v, 2, 7
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.Topic, rt.TopicID = "r", [16]byte{1}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = 3, 4, 5
		rp.NewISR = []int32{2, 1}
		for _, id := range rp.NewISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID = id
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		rt.Partitions = []kmsg.AlterPartitionRequestTopicPartition{rp}
		req.Topics = []kmsg.AlterPartitionRequestTopic{rt}
		decoded := kmsg.NewPtrAlterPartitionRequest()
		decoded.Version = v
		require.NoError(t, decoded.ReadFrom(req.AppendTo(nil)))

		msg, ok := controllerRequest(decoded)
		require.True(t, ok)
		ap := msg.(controller.AlterPartition)
		require.Equal(t, int32(2), ap.NodeID)
		require.Equal(t, int64(7), ap.BrokerEpoch)
		require.Equal(t, int32(3), ap.Partition)
		require.Equal(t, int32(4), ap.LeaderEpoch)
		require.Equal(t, int32(5), ap.PartitionEpoch)
		require.Equal(t, []int32{2, 1}, ap.NewISR, "v%d", v)
		if v < 2 {
			require.Equal(t, "r", ap.Topic)
		}

		st := meta.PartitionState{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2,
			LeaderEpoch: 4, PartitionEpoch: 6}
		resp := controllerResponse(decoded, controller.AlterPartitionResponse{State: st})
		out := resp.(*kmsg.AlterPartitionResponse)
		require.Len(t, out.Topics, 1)
		p := out.Topics[0].Partitions[0]
		require.Equal(t, int32(3), p.Partition)
		require.Equal(t, int32(6), p.PartitionEpoch)
		require.Equal(t, []int32{1, 2}, p.ISR)
		nc := notControllerResponse(decoded).(*kmsg.AlterPartitionResponse)
		require.Equal(t, kerr.NotController.Code, nc.Topics[0].Partitions[0].ErrorCode)
	}
}
