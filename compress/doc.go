// Package compress inflates the records section of compressed Kafka record batches for
// the broker: it is the real implementation of core/batch.Decompressor, which the node
// (runtime/) and the simulator (sim/) inject into the broker. Produce inflates every
// compressed batch to validate its records, and ListOffsets by timestamp inflates the
// batch holding the record it must answer; fetch never looks inside batches. Codecs
// also implements batch.Inflater, the streaming form produce uses, so a batch is
// validated without being held inflated. Decoders are pooled across calls.
//
// The codecs are Kafka's: gzip (1), snappy (2) in either framing (the xerial framing
// Java clients write, or one raw snappy block as librdkafka and franz-go write), lz4 (3)
// in the LZ4 frame format, and zstd (4). Every codec stops at the caller's byte limit
// and reports batch.ErrDecompressedTooLarge, so a zip bomb costs bounded memory.
// Decompression is deterministic and starts no goroutines that outlive a call (zstd and
// lz4 run single-threaded), so the simulator replays it exactly.
//
// It lives outside core/ because the libraries use sync and goroutine pools, which the
// purity lint forbids there.
package compress
