package disk

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// The storage id is drawn once, when the data directory is new, and read back at every
// later start; a new (wiped) directory gets another.
func TestStorageIDIsDrawnOnceAndKept(t *testing.T) {
	st := NewMemState()
	draws := 0
	draw := func() [16]byte {
		draws++
		return [16]byte{byte(draws), 7}
	}
	a, err := StorageID(st, draw)
	require.NoError(t, err)
	require.Equal(t, [16]byte{1, 7}, a)
	st.Reopen(nil)
	b, err := StorageID(st, draw)
	require.NoError(t, err)
	require.Equal(t, a, b, "read back, not drawn again")
	require.Equal(t, 1, draws)
	c, err := StorageID(NewMemState(), draw)
	require.NoError(t, err)
	require.NotEqual(t, a, c, "a new directory, a new id")
	z, err := StorageID(NewMemState(), func() [16]byte { return [16]byte{} })
	require.NoError(t, err)
	require.NotEqual(t, [16]byte{}, z, "never zero: zero means unknown")
}

func TestStorageIDReportsAStoreThatFails(t *testing.T) {
	st := NewMemState()
	st.SetFault(func(Op, string) error { return errors.New("disk on fire") })
	_, err := StorageID(st, func() [16]byte { return [16]byte{1} })
	require.ErrorContains(t, err, "storage id")
}
