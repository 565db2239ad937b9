package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/batch"
)

func TestStrictRecordsDecodesWhatBuildMakes(t *testing.T) {
	kvs := []batch.KV{{Key: []byte("k"), Value: []byte("v1")}, {Key: nil, Value: []byte{}},
		{Key: []byte("k2"), Value: make([]byte, 300)}}
	got, err := strictRecords(batch.Build(kvs, batch.NoProducer, 1000))
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, "v1", string(got[0].Value))
	require.Len(t, got[2].Value, 300)
}

// Every malformation the vandal sends must fail the strict decoder too: the checker
// and the vandal agree on what is malformed, so a broker that accepts one is caught
// twice (by the vandal's answer and by any reader that fetches it).
func TestStrictRecordsRefusesEveryMalformation(t *testing.T) {
	r := newStream(1, "test")
	for kind := malformKind(0); kind < numMalformKinds; kind++ {
		for i := 0; i < 20; i++ {
			b := malformedBatch(r, kind, 1000)
			// Each passes the header checks (length, CRC, count against lastOffsetDelta):
			// only a look at the records shows what is wrong.
			_, err := batch.Check(b)
			require.NoError(t, err, "kind %s", kind)
			_, err = strictRecords(b)
			require.Error(t, err, "kind %s decoded strictly", kind)
		}
	}
}
