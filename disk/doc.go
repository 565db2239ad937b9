// Package disk is Sluice's storage layer: everything that turns bytes into files.
//
// It has five parts, each usable on its own:
//
//   - A filesystem seam (FS, File) with the POSIX durability contract: written bytes
//     are durable after a File.Sync, created, removed and renamed entries after an
//     fsync of their directory (SyncDir). OSFS is the real one. MemFS is an in-memory,
//     crashable filesystem for tests and the deterministic simulator: Crash drops every
//     byte and every directory entry that was not synced, except that the last unsynced
//     writes of a file may survive as a torn (and possibly garbled) prefix; Fly keeps
//     fsyncs in flight, FreezeAfter lands a crash between two operations, SetFault
//     injects I/O errors.
//   - FileCache, an FS over another that bounds the descriptors its files hold: least
//     recently used handles are fsynced if dirty, closed, and reopened on use.
//   - A StateStore for node-local key/value state (log start offsets, snapshots of
//     producer state, segment creation times, the metadata log). OpenPebbleState backs it
//     with pebble and synced writes; NewMemState is a map for tests and the simulator
//     that fails and loses writes in doubt at a restart as pebble can (SetFault, Reopen).
//   - MetaLog, the node's committed metadata records in a StateStore.
//   - PartitionLog, one partition's segmented log of Kafka RecordBatch v2 bytes with a
//     sparse offset index and a time index, implementing replica.Log. Recovery on open
//     validates every byte not certified by an index file and truncates the first torn,
//     corrupt or non-contiguous batch.
//
// Concurrency: PartitionLog methods run on the replica's actor thread, except Sync,
// which may run on another goroutine at the same time (group commit). Sync fsyncs
// without holding the lock that Append takes, so an fsync never stalls appends.
//
// docs/storage.md describes the on-disk format, the crash model and the durability
// rules in full.
package disk
