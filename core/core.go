package core

import "fmt"

// Time is a point in time in nanoseconds since the Unix epoch. Drivers guarantee that the
// Time handed to an actor never decreases: production derives it from the monotonic
// clock anchored to the wall clock at start-up; the simulator from its virtual clock
// (plus a per-node skew that is fixed for the run).
type Time int64

// Millis returns t in milliseconds since the epoch, as Kafka timestamps are.
func (t Time) Millis() int64 { return int64(t) / 1e6 }

// Add returns t moved forward by ms milliseconds.
func (t Time) AddMillis(ms int64) Time { return t + Time(ms*1e6) }

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Less orders partitions by topic, then number: the order in which actors emit effects
// that touch several partitions, so output never depends on map iteration.
func (tp TopicPartition) Less(o TopicPartition) bool {
	if tp.Topic != o.Topic {
		return tp.Topic < o.Topic
	}
	return tp.Partition < o.Partition
}

// Rand is the seeded randomness an actor is handed at construction. Production seeds it
// from the OS at start-up; the simulator from the run's seed.
type Rand interface {
	Int63() int64
	Intn(n int) int
}

// Invariant panics with a message naming the broken invariant (numbered in
// docs/invariants.md) when ok is false. Impossible states stop the actor rather than
// letting it corrupt data.
func Invariant(ok bool, id string, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("invariant %s violated: %s", id, fmt.Sprintf(format, args...)))
	}
}
