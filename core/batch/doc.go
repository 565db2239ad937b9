// Package batch reads, checks and rewrites the fixed header of a Kafka RecordBatch
// (message format v2, "magic 2").
//
// Sluice stores batches exactly as producers sent them. The broker touches only the
// header: it assigns the base offset and the partition leader epoch, neither of which
// is covered by the CRC, so a batch can be rewritten without recomputing its checksum.
// Records inside a batch (possibly compressed) are never decoded on the write path.
// The one reader of records is WalkTimestamps, for ListOffsets by time: it walks each
// record's offset and timestamp, inflating a compressed batch through a Decompressor the
// caller injects (codec libraries live outside core, in package compress).
//
// Layout of the 61-byte header (big endian):
//
//	 0 baseOffset            int64
//	 8 batchLength           int32   bytes after this field
//	12 partitionLeaderEpoch  int32
//	16 magic                 int8    must be 2
//	17 crc                   uint32  CRC-32C of bytes [21, end)
//	21 attributes            int16
//	23 lastOffsetDelta       int32
//	27 baseTimestamp         int64
//	35 maxTimestamp          int64
//	43 producerId            int64
//	51 producerEpoch         int16
//	53 baseSequence          int32
//	57 recordCount           int32
//
// The package is pure: no I/O, no clock, no allocation on the hot path.
package batch
