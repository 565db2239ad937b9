package disk

import "fmt"

// storageIDKey holds the node's storage id in its state store.
var storageIDKey = []byte("node/storage-id")

// StorageID returns the id of the data directory whose state store st is, drawing one
// with draw and storing it the first time (Kafka's log directory id, KIP-858). A node
// registers it with the controller: a node whose data directory was lost or replaced
// comes back with another id, and the controller then knows its logs are not the ones
// its ISR places vouched for (docs/replication.md, "Lost disks"). The id lives in the
// state store, which sits in the data directory with the logs: losing one loses both.
// draw must not return zero (zero means "unknown" to the controller).
func StorageID(st StateStore, draw func() [16]byte) ([16]byte, error) {
	var id [16]byte
	v, ok, err := st.Get(storageIDKey)
	if err != nil {
		return id, fmt.Errorf("read the storage id: %w", err)
	}
	if ok {
		if len(v) != len(id) {
			return id, fmt.Errorf("storage id has %d bytes, not %d", len(v), len(id))
		}
		copy(id[:], v)
		return id, nil
	}
	id = draw()
	if id == ([16]byte{}) {
		id[0] = 1
	}
	if err := st.Set(storageIDKey, id[:]); err != nil {
		return [16]byte{}, fmt.Errorf("store the storage id: %w", err)
	}
	return id, nil
}
