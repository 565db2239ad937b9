// Package batch reads, checks and rewrites the fixed header of a Kafka RecordBatch
// (message format v2, "magic 2").
//
// Sluice stores batches as producers sent them. The broker touches only the header: it
// assigns the base offset and the partition leader epoch, neither of which is covered by
// the CRC, and for CreateTime topics sets the max timestamp to the records' (recomputing
// the CRC, as Kafka does). Before storing, Validate decodes every record in place, as
// Kafka's log validator does, so that everything stored decodes completely; CheckRecords
// does the same framing checks on a stored batch. WalkTimestamps walks each record's
// offset and timestamp for ListOffsets by time. All three inflate a compressed batch
// through a Decompressor the caller injects (codec libraries live outside core, in
// package compress), bounded; Validate and CheckRecords stream the records instead when
// the Decompressor is also an Inflater, so a batch is never held inflated.
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
