package net

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type observed struct {
	key, version int16
	resp         kmsg.Response
	elapsed      time.Duration
}

type recordingObserver struct {
	mu   sync.Mutex
	seen []observed
}

func (o *recordingObserver) RequestDone(key, version int16, resp kmsg.Response,
	elapsed time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, observed{key, version, resp, elapsed})
}

func (o *recordingObserver) all() []observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]observed(nil), o.seen...)
}

// Every answered request is observed once, with its key and version and the time it
// waited for its answer; the server's own answers too. Connections are counted as they
// open and close.
func TestObserverSeesEachAnsweredRequestOnce(t *testing.T) {
	sink := newFakeSink(false)
	obs := &recordingObserver{}
	srv := startServer(t, sink, Options{Observer: obs})
	nc := dial(t, srv)

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "t", "1"
	send(t, nc, 1, av)
	readResponse(t, nc, kmsg.NewPtrApiVersionsResponse(), 3)

	send(t, nc, 2, metadataReq(4))
	r := sink.next(t)
	time.Sleep(20 * time.Millisecond) // the answer waits: the observed time says so
	require.Len(t, obs.all(), 1, "not observed before its answer")
	sink.answer(r)
	readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 4)

	seen := obs.all()
	require.Len(t, seen, 2)
	require.Equal(t, int16(kmsg.ApiVersions), seen[0].key)
	require.Equal(t, int16(3), seen[0].version)
	require.Equal(t, int16(kmsg.Metadata), seen[1].key)
	require.Equal(t, int16(4), seen[1].version)
	require.IsType(t, &kmsg.MetadataResponse{}, seen[1].resp)
	require.GreaterOrEqual(t, seen[1].elapsed, 20*time.Millisecond)

	require.EqualValues(t, 1, srv.Stats().ConnsOpened)
	require.NoError(t, nc.Close())
	require.Eventually(t, func() bool { return srv.Stats().ConnsClosed == 1 },
		5*time.Second, 5*time.Millisecond)
}
