package main

// kgo fails a record that could not be delivered in time with a bare
// kgo.ErrRecordTimeout: the reason (the broker refused the batch, or could not be
// reached at all) is only in kgo's log and hooks. causeRecorder listens there so the
// CLI can say why.

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// causeRecorder remembers the latest reason kgo met for not delivering records.
type causeRecorder struct {
	mu   sync.Mutex
	last error
}

var (
	_ kgo.Logger            = (*causeRecorder)(nil)
	_ kgo.HookBrokerConnect = (*causeRecorder)(nil)
)

func (c *causeRecorder) set(err error) {
	c.mu.Lock()
	c.last = err
	c.mu.Unlock()
}

// cause is the latest reason recorded, or nil.
func (c *causeRecorder) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// opts installs the recorder on a client.
func (c *causeRecorder) opts() []kgo.Opt {
	return []kgo.Opt{kgo.WithLogger(c), kgo.WithHooks(c)}
}

// Level implements kgo.Logger: a retried batch's error code shows only at debug.
func (c *causeRecorder) Level() kgo.LogLevel { return kgo.LogLevelDebug }

// Log implements kgo.Logger, keeping the error of a failed produce request or batch.
func (c *causeRecorder) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	switch msg {
	case "produced":
		// One line per produce response; batches kgo retries show as
		// "t[0{retrying@-1,1(KAFKA_STORAGE_ERROR: Disk error ...)}]".
		for i := 0; i+1 < len(keyvals); i += 2 {
			if k, _ := keyvals[i].(string); k == "to" {
				if err := retriedCode(fmt.Sprint(keyvals[i+1])); err != nil {
					c.set(err)
				}
			}
		}
		return
	case "batch in a produce request failed", "produce request failed, triggering metadata update",
		"produce request failed with a retryable error, retrying without a metadata update",
		"random error while producing, requeueing unattempted request":
	default:
		return
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, _ := keyvals[i].(string); k == "err" {
			if err, ok := keyvals[i+1].(error); ok && err != nil {
				c.set(dialErr(err))
			}
		}
	}
}

// retriedCodeRe finds a Kafka error name in kgo's description of a produce response.
var retriedCodeRe = regexp.MustCompile(`\(([A-Z_]+): `)

// retriedCode is the Kafka error named in kgo's produce-response description, or nil.
func retriedCode(desc string) error {
	m := retriedCodeRe.FindStringSubmatch(desc)
	if m == nil {
		return nil
	}
	for code := int16(1); code < 200; code++ {
		if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && ke.Message == m[1] {
			return ke
		}
	}
	return nil
}

// OnBrokerConnect implements kgo.HookBrokerConnect, keeping failed dials.
func (c *causeRecorder) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn,
	err error) {
	if err == nil {
		return
	}
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	c.set(&unreachableErr{addr: addr, err: err})
}

// dialErr words a failed dial as the node being unreachable; other errors pass.
func dialErr(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && op.Addr != nil {
		return &unreachableErr{addr: op.Addr.String(), err: err}
	}
	return err
}

// unreachableErr is a failed connection to one node.
type unreachableErr struct {
	addr string
	err  error
}

func (e *unreachableErr) Error() string {
	var errno syscall.Errno
	if errors.As(e.err, &errno) {
		return fmt.Sprintf("node %s unreachable: %v", e.addr, errno)
	}
	if isTimeout(e.err) {
		return fmt.Sprintf("node %s unreachable: connecting timed out", e.addr)
	}
	return fmt.Sprintf("node %s unreachable: %v", e.addr, e.err)
}

func (e *unreachableErr) Unwrap() error { return e.err }

// causeText words a recorded cause for the end of an error message.
func causeText(err error, topic string) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		msg, _ := kerrText(ke, topic)
		return msg
	}
	var ue *unreachableErr
	if errors.As(err, &ue) {
		return ue.Error()
	}
	return friendly(err, topic, "").Error()
}
