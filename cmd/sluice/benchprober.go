package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// prober is the failover benchmark's producer: an idempotent acks=all client writing one
// record at a time to the partition under test, each after the previous one's answer,
// so that "the next acknowledged write after the fault" is one record sent after it.
type prober struct {
	cl     *kgo.Client
	part   atomic.Int32
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	acks []probeAck // bounded: the last probeKeep
}

type probeAck struct {
	part       int32
	sent, done time.Time
}

// probeKeep bounds the acknowledgements the prober remembers.
const probeKeep = 4096

func startProber(ctx context.Context, bootstrap, topic string,
	minAge time.Duration) (*prober, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
		kgo.MetadataMinAge(minAge), kgo.RecordDeliveryTimeout(30*time.Second),
		// A constant 100 ms between retries, the Java client's retry.backoff.ms default:
		// franz-go's default grows from 250 ms to 2.5 s, so after a kill its retry
		// would land up to a second after the new leader was ready and the figure
		// would time the client's backoff, not the failover.
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.ProduceRequestTimeout(10*time.Second))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &prober{cl: cl, cancel: cancel, done: make(chan struct{})}
	go p.run(ctx)
	return p, nil
}

func (p *prober) run(ctx context.Context) {
	defer close(p.done)
	value := make([]byte, 1024)
	for ctx.Err() == nil {
		part := p.part.Load()
		sent := time.Now()
		err := p.cl.ProduceSync(ctx, &kgo.Record{Partition: part, Value: value}).FirstErr()
		if err != nil {
			select { // a refused write (no leader yet): try again soon, bounded by ctx
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		if len(p.acks) >= probeKeep {
			p.acks = append(p.acks[:0], p.acks[probeKeep/2:]...)
		}
		p.acks = append(p.acks, probeAck{part: part, sent: sent, done: time.Now()})
		p.mu.Unlock()
	}
}

// target makes the prober write to part from its next record on.
func (p *prober) target(part int32) { p.part.Store(part) }

// ackAfter waits for the first acknowledgement of a record to the target partition sent
// at or after t0, and returns how long after t0 it came.
func (p *prober) ackAfter(ctx context.Context, t0 time.Time) (time.Duration, error) {
	want := p.part.Load()
	for {
		p.mu.Lock()
		for _, a := range p.acks {
			if a.part == want && !a.sent.Before(t0) {
				p.mu.Unlock()
				return a.done.Sub(t0), nil
			}
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waited for an acknowledgement: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond): // polling, bounded by ctx
		}
	}
}

func (p *prober) stop() {
	p.cancel()
	<-p.done
	p.cl.Close()
}
