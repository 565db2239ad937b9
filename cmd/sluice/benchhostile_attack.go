package main

// The hostile clients of `sluice bench hostile` (benchhostile.go): connections that
// say hello and then sit idle, slow-loris connections that start a frame and trickle
// it one byte at a time, and greedy producers that write Produce requests back to back
// whatever ThrottleMillis their answers carry. Every loop ends when the attack is
// stopped, and every connection is closed then.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	stdnet "net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// attackOpts is what the attack needs of the bench's options.
type attackOpts struct {
	addr         string // one broker, host:port
	source       string // local IP of the hostile connections ("": any)
	idle, slow   int
	greedy       int
	greedyTopic  string
	greedyClient string        // the client id whose quota the greedy ones share
	slowInterval time.Duration // between two trickled bytes
	openBound    time.Duration // for opening all the idle connections
}

// attack is one run of the hostile clients.
type attack struct {
	o      attackOpts
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[stdnet.Conn]struct{} // every connection open now, closed by stop
	idle   []stdnet.Conn            // the idle connections the node accepted

	idleRefused                 int
	slowAccepted, slowRefused   atomic.Int64
	slowCloses                  []time.Duration // first trickled byte to the node's close
	greedyAcked, greedyRecords  atomic.Int64    // bytes and records acknowledged
	greedyThrottled, greedyDead atomic.Int64    // throttled answers; conns closed early
	greedyBytes                 int64           // record bytes in one greedy request
	openTook                    time.Duration
	started                     time.Time
	stopOnce                    sync.Once
	stats                       attackStats
}

// attackStats is what an attack saw, for the figures.
type attackStats struct {
	idleAccepted, idleRefused, idleClosed int
	slowAccepted, slowRefused             int64
	slowCloses                            []time.Duration // sorted
	greedyAcked, greedyRecords            int64
	greedyThrottled, greedyDead           int64
	openTook, ran                         time.Duration
}

// startAttack opens the greedy and slow connections, then the idle ones (within
// o.openBound), and returns with all of them running. The greedy and slow ones go
// first so that a per-address cap (max.connections.per.ip) is spent by the idle flood,
// not by them.
func startAttack(ctx context.Context, o attackOpts) (*attack, error) {
	a := &attack{o: o, conns: map[stdnet.Conn]struct{}{}}
	a.ctx, a.cancel = context.WithCancel(ctx)
	a.started = time.Now()
	frame, size := greedyFrame(o.greedyTopic, o.greedyClient)
	a.greedyBytes = int64(size)
	for range o.greedy {
		if err := a.startGreedy(frame); err != nil {
			a.stop()
			return nil, err
		}
	}
	ready := make(chan struct{}, o.slow)
	for range o.slow {
		a.wg.Add(1)
		go a.slowLoris(ready)
	}
	for range o.slow { // each slow client's first connection is answered or refused
		select {
		case <-ready:
		case <-time.After(o.openBound):
			a.stop()
			return nil, fmt.Errorf("the slow clients did not connect within %v", o.openBound)
		}
	}
	if err := a.openIdle(); err != nil {
		a.stop()
		return nil, err
	}
	a.openTook = time.Since(a.started)
	return a, nil
}

// dial connects from o.source, registering the connection for stop.
func (a *attack) dial() (stdnet.Conn, error) {
	d := stdnet.Dialer{Timeout: 5 * time.Second}
	if a.o.source != "" {
		d.LocalAddr = &stdnet.TCPAddr{IP: stdnet.ParseIP(a.o.source)}
	}
	nc, err := d.DialContext(a.ctx, "tcp", a.o.addr)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx.Err() != nil { // stop already closed the others
		nc.Close()
		return nil, a.ctx.Err()
	}
	a.conns[nc] = struct{}{}
	return nc, nil
}

func (a *attack) forget(nc stdnet.Conn) {
	nc.Close()
	a.mu.Lock()
	delete(a.conns, nc)
	a.mu.Unlock()
}

// hello sends ApiVersions and reads its answer within bound: false when the node
// closed the connection instead (a connection cap) or did not answer.
func hello(nc stdnet.Conn, bound time.Duration) bool {
	_ = nc.SetDeadline(time.Now().Add(bound))
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := nc.Write(hostileFormatter.AppendRequest(nil, req, 0)); err != nil {
		return false
	}
	_, err := readFrame(nc)
	return err == nil
}

var hostileFormatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("sluice-bench-hostile"))

// readFrame reads one response frame (size prefix, then the body).
func readFrame(nc stdnet.Conn) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	body := make([]byte, n)
	_, err := io.ReadFull(nc, body)
	return body, err
}

// openIdle opens o.idle connections, 32 at a time, each saying hello once.
func (a *attack) openIdle() error {
	ctx, cancel := context.WithTimeout(a.ctx, a.o.openBound)
	defer cancel()
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	var failed error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				nc, err := a.dial()
				answered := err == nil && hello(nc, 10*time.Second)
				if err == nil && !answered {
					a.forget(nc) // refused: its descriptor is not kept until the end
				}
				a.mu.Lock()
				switch {
				case err != nil:
					failed = cmpFirst(failed, err)
				case answered:
					a.idle = append(a.idle, nc)
				default:
					a.idleRefused++
				}
				a.mu.Unlock()
			}
		}()
	}
	stopped := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return failed != nil || ctx.Err() != nil
	}
	for i := 0; i < a.o.idle && !stopped(); i++ {
		select {
		case jobs <- struct{}{}:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait() // failed is read below without the lock: every writer has ended
	if failed != nil {
		return fmt.Errorf("opening the idle connections: %w (is the open-file limit, "+
			"ulimit -n, high enough?)", failed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("opening %d idle connections took more than %v", a.o.idle,
			a.o.openBound)
	}
	return nil
}

func cmpFirst(old, err error) error {
	if old != nil {
		return old
	}
	return err
}

// slowLoris connects, says hello, then sends the size of a 1000-byte frame and one
// byte of it every slowInterval until the node closes the connection, and starts
// again, until the attack stops. ready is told once, after the first connection.
func (a *attack) slowLoris(ready chan<- struct{}) {
	defer a.wg.Done()
	first := true
	for a.ctx.Err() == nil {
		nc, err := a.dial()
		if err == nil && hello(nc, 10*time.Second) {
			a.slowAccepted.Add(1)
			if first {
				ready <- struct{}{}
				first = false
			}
			a.trickle(nc)
		} else if a.ctx.Err() == nil {
			a.slowRefused.Add(1)
			if first {
				ready <- struct{}{}
				first = false
			}
			a.pause(a.o.slowInterval) // as a client backs off before reconnecting
		}
		if nc != nil {
			a.forget(nc)
		}
	}
}

// trickle sends a frame header and then one byte per interval, watching for the close.
func (a *attack) trickle(nc stdnet.Conn) {
	start := time.Now()
	if _, err := nc.Write([]byte{0, 0, 3, 232}); err != nil { // a 1000-byte frame
		return
	}
	buf := make([]byte, 64)
	for a.ctx.Err() == nil {
		_ = nc.SetReadDeadline(time.Now().Add(a.o.slowInterval))
		_, err := nc.Read(buf)
		if err == nil {
			continue // nothing is expected before the frame ends; ignore it
		}
		var ne stdnet.Error
		if errors.As(err, &ne) && ne.Timeout() {
			if _, err := nc.Write([]byte{0}); err == nil {
				continue
			}
		}
		if a.ctx.Err() == nil { // the node closed it
			a.mu.Lock()
			a.slowCloses = append(a.slowCloses, time.Since(start))
			a.mu.Unlock()
		}
		return
	}
}

// pause waits d or until the attack stops.
func (a *attack) pause(d time.Duration) {
	select {
	case <-a.ctx.Done():
	case <-time.After(d):
	}
}

// greedyFrame is one Produce request (v8, acks=1) of one 10 KiB record for the greedy
// clients, and the record bytes it carries.
func greedyFrame(topic, clientID string) ([]byte, int) {
	value := make([]byte, 10<<10)
	_, _ = rand.Read(value)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 8, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch.Build([]batch.KV{{Value: value}}, batch.NoProducer,
		time.Now().UnixMilli())
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	return f.AppendRequest(nil, req, 1), len(rp.Records)
}

// startGreedy opens one greedy connection: a writer that sends frame back to back and
// a reader that counts the answers, their throttles included, and ignores them.
func (a *attack) startGreedy(frame []byte) error {
	nc, err := a.dial()
	if err != nil {
		return fmt.Errorf("a greedy connection: %w", err)
	}
	a.wg.Add(2)
	go func() {
		defer a.wg.Done()
		for a.ctx.Err() == nil {
			if _, err := nc.Write(frame); err != nil {
				return
			}
		}
	}()
	go func() {
		defer a.wg.Done()
		defer a.forget(nc)
		for a.ctx.Err() == nil {
			body, err := readFrame(nc)
			if err != nil {
				if a.ctx.Err() == nil {
					a.greedyDead.Add(1)
				}
				return
			}
			a.countGreedy(body)
		}
	}()
	return nil
}

func (a *attack) countGreedy(body []byte) {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 8
	if len(body) < 4 || resp.ReadFrom(body[4:]) != nil || len(resp.Topics) != 1 ||
		len(resp.Topics[0].Partitions) != 1 {
		return
	}
	if resp.ThrottleMillis > 0 {
		a.greedyThrottled.Add(1)
	}
	if resp.Topics[0].Partitions[0].ErrorCode == 0 {
		a.greedyAcked.Add(a.greedyBytes)
		a.greedyRecords.Add(1)
	}
}

// idleStillOpen counts the accepted idle connections the node has not closed: a read
// that times out finds the connection open, one that ends finds it closed.
func (a *attack) idleStillOpen() int {
	a.mu.Lock()
	idle := slices.Clone(a.idle)
	a.mu.Unlock()
	var open atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan stdnet.Conn)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			for nc := range jobs {
				_ = nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				_, err := nc.Read(buf)
				var ne stdnet.Error
				if errors.As(err, &ne) && ne.Timeout() {
					open.Add(1)
				}
			}
		}()
	}
	for _, nc := range idle {
		jobs <- nc
	}
	close(jobs)
	wg.Wait()
	return int(open.Load())
}

// stop ends every hostile client, closes every connection and returns what was seen.
// Idempotent: later calls return the first call's figures.
func (a *attack) stop() attackStats {
	a.stopOnce.Do(func() { a.stats = a.stopNow() })
	return a.stats
}

func (a *attack) stopNow() attackStats {
	open := a.idleStillOpen()
	a.cancel()
	a.mu.Lock()
	for nc := range a.conns {
		nc.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	closes := slices.Clone(a.slowCloses)
	slices.Sort(closes)
	return attackStats{
		idleAccepted: len(a.idle), idleRefused: a.idleRefused,
		idleClosed:   len(a.idle) - open,
		slowAccepted: a.slowAccepted.Load(), slowRefused: a.slowRefused.Load(),
		slowCloses:  closes,
		greedyAcked: a.greedyAcked.Load(), greedyRecords: a.greedyRecords.Load(),
		greedyThrottled: a.greedyThrottled.Load(), greedyDead: a.greedyDead.Load(),
		openTook: a.openTook, ran: time.Since(a.started),
	}
}
