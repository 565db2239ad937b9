// Package batchtest builds malformed but CRC-valid record batches, the kinds a broken
// or hostile producer sends, for the tests of the validator, the broker and the
// end-to-end hostile-client suite. Each case says which Kafka error code the broker
// must answer. The package is pure, like the rest of core.
package batchtest
