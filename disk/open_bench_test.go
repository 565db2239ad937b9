package disk

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/replica"
)

// BenchmarkOpenNewPartitionLog measures what creating one new, empty partition log
// costs the caller (the broker's event loop) on the real filesystem, with the node's
// pebble state store and handle cache, laid out as a node lays out its data directory:
// <data>/logs/<topic>-<p>. docs/storage.md records where the time goes.
func BenchmarkOpenNewPartitionLog(b *testing.B) {
	data := b.TempDir()
	st, err := OpenPebbleState(context.Background(), data+"/state", zap.NewNop())
	require.NoError(b, err)
	defer st.Close()
	files := NewFileCache(OSFS{}, 1000)
	require.NoError(b, OSFS{}.MkdirAll(data+"/logs"))
	logs := make([]*PartitionLog, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tp := fmt.Sprintf("t-%d", i)
		l, err := OpenPartitionLog(files, data+"/logs/"+tp, st, "log/"+tp+"/",
			replica.SegmentConfig{}, 0, zap.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, l)
	}
	b.StopTimer()
	for _, l := range logs {
		_ = l.Close()
	}
}
