package sim

import (
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ringWriter keeps the last lines written to it, so a passing run pays little for
// logging and a failing run still has the latest context. Failures are then rerun in
// verbose mode (the run is deterministic) to write the whole log.
type ringWriter struct {
	lines [][]byte
	next  int
	full  bool
}

func newRingWriter(n int) *ringWriter { return &ringWriter{lines: make([][]byte, n)} }

func (r *ringWriter) Write(p []byte) (int, error) {
	r.lines[r.next] = append(r.lines[r.next][:0], p...)
	r.next++
	if r.next == len(r.lines) {
		r.next, r.full = 0, true
	}
	return len(p), nil
}

func (r *ringWriter) Sync() error { return nil }

// WriteTo copies the kept lines, oldest first.
func (r *ringWriter) WriteTo(w io.Writer) (int64, error) {
	var total int64
	emit := func(lines [][]byte) error {
		for _, l := range lines {
			n, err := w.Write(l)
			total += int64(n)
			if err != nil {
				return err
			}
		}
		return nil
	}
	if r.full {
		if err := emit(r.lines[r.next:]); err != nil {
			return total, err
		}
	}
	return total, emit(r.lines[:r.next])
}

// virtualClock gives zap the world's virtual time, so a seed's log is the same on every
// run.
type virtualClock struct{ w *World }

func (c virtualClock) Now() time.Time { return time.Unix(0, epochNs+c.w.now) }

// NewTicker is only used by zap's buffered writers, which the simulator does not use.
func (c virtualClock) NewTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

// newLogger builds a node's logger writing to w at the given level, stamped with virtual
// seconds since the start of the run.
func newLogger(w *World, out zapcore.WriteSyncer, level zapcore.Level, name string) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = func(t time.Time, pe zapcore.PrimitiveArrayEncoder) {
		pe.AppendString(fmtTime(t.UnixNano() - epochNs))
	}
	enc.EncodeCaller = nil
	enc.CallerKey = ""
	enc.StacktraceKey = ""
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), out, level)
	return zap.New(core, zap.WithClock(virtualClock{w})).Named(name)
}
