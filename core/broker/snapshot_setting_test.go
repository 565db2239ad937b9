package broker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

// sluice.producer.snapshot.interval.batches reaches every replica's config; it defaults
// to replica.DefaultSnapshotEveryBatches and must be at least 1.
func TestProducerSnapshotIntervalSetting(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, replica.DefaultSnapshotEveryBatches, c.ProducerSnapshotEveryBatches)
	require.Contains(t, SettingNames(), "sluice.producer.snapshot.interval.batches")
	require.NoError(t, c.Set("sluice.producer.snapshot.interval.batches", "7"))
	require.Equal(t, 7, c.ProducerSnapshotEveryBatches)
	require.Error(t, c.Set("sluice.producer.snapshot.interval.batches", "0"))
	require.Error(t, c.Set("sluice.producer.snapshot.interval.batches", "x"))

	b := &node{cfg: c}
	require.Equal(t, 7, b.replicaConfig(&meta.Topic{}).SnapshotEveryBatches)
}
