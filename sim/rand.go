package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// Rand is one deterministic random stream. It satisfies core.Rand (handed to the broker)
// and the crash randomness the in-memory filesystem asks for.
type Rand struct{ r *rand.Rand }

// newStream derives the stream called name from the run's root seed. Deriving by name,
// not by drawing from a shared generator, keeps every stream stable when another
// component starts drawing more or fewer numbers; the derivation itself is a fixed
// function of (seed, name), so the streams are always split in the same way.
func newStream(seed uint64, name string) *Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return &Rand{r: rand.New(rand.NewPCG(seed, h.Sum64()))}
}

// Int63 returns a non-negative 63-bit integer.
func (r *Rand) Int63() int64 { return r.r.Int64() }

// Intn returns an integer in [0, n); n <= 0 returns 0 rather than panicking so a
// degenerate configuration cannot crash the world.
func (r *Rand) Intn(n int) int {
	if n <= 0 {
		return 0
	}
	return r.r.IntN(n)
}

// Uint64 returns 64 random bits.
func (r *Rand) Uint64() uint64 { return r.r.Uint64() }

// Float64 returns a float in [0, 1).
func (r *Rand) Float64() float64 { return r.r.Float64() }

// Chance is true with probability p.
func (r *Rand) Chance(p float64) bool { return p > 0 && r.r.Float64() < p }

// Between returns an integer in [lo, hi].
func (r *Rand) Between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + r.r.Int64N(hi-lo+1)
}

// Exp draws from an exponential distribution with the given mean, plus floor, capped at
// 100 means so one unlucky draw cannot stall a run (latencies with a long tail).
func (r *Rand) Exp(floor, mean int64) int64 {
	if mean <= 0 {
		return floor
	}
	v := r.r.ExpFloat64() * float64(mean)
	return floor + int64(math.Min(v, 100*float64(mean)))
}

// Pick returns one of choices, uniformly.
func Pick[T any](r *Rand, choices ...T) T { return choices[r.Intn(len(choices))] }
