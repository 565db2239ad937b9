package net

import (
	"math/bits"
	"sync"
)

// Write buffers of the size classes 64 KiB, 128 KiB, ... 8 MiB are shared between the
// connections' writers through one sync.Pool per class. A writer that encodes a
// follower's 1 MiB Fetch answer would otherwise drop its buffer when it goes idle
// (keepIdleBufferBytes) and grow a fresh one by doubling for the next answer: every
// doubling copies what was encoded so far, and the runtime zeroes every new large
// allocation. Profiled on a 3-node acks=all run, that was a tenth of a partition
// leader's CPU (docs/benchmarks.md, "Write buffers from a pool"). Buffers in the pool
// hold no data anyone reads: a writer puts one back only after its bytes were written.
const (
	minPooledShift = 16 // 64 KiB
	maxPooledShift = 23 // 8 MiB
)

var writeBufs [maxPooledShift - minPooledShift + 1]sync.Pool // of *[]byte

// getWriteBuf returns an empty buffer with room for at least n bytes: from the pool when
// a class holds n, else freshly allocated.
func getWriteBuf(n int) []byte {
	shift := poolClassFor(n)
	if shift > maxPooledShift {
		return make([]byte, 0, n)
	}
	if p, ok := writeBufs[shift-minPooledShift].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<shift)
}

// putWriteBuf gives b back for reuse: into the largest class its capacity fills. Buffers
// smaller than the smallest class or larger than the largest are left to the collector.
func putWriteBuf(b []byte) {
	c := cap(b)
	if c < 1<<minPooledShift {
		return
	}
	shift := bits.Len(uint(c)) - 1 // the largest class with 1<<shift <= c
	if shift > maxPooledShift {
		return
	}
	b = b[:0]
	writeBufs[shift-minPooledShift].Put(&b)
}

// poolClassFor is the smallest class shift whose buffers hold n bytes.
func poolClassFor(n int) int {
	if n <= 1<<minPooledShift {
		return minPooledShift
	}
	return bits.Len(uint(n - 1))
}

// growWriteBuf makes room for n more bytes in buf: when it has not, the bytes so far go
// into a pooled buffer big enough, and buf goes back to the pool.
func growWriteBuf(buf []byte, n int) []byte {
	if cap(buf)-len(buf) >= n {
		return buf
	}
	grown := append(getWriteBuf(len(buf)+n), buf...)
	putWriteBuf(buf)
	return grown
}
