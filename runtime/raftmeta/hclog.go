package raftmeta

import (
	"bytes"
	"sync"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newHCLog returns an hclog.Logger (what hashicorp/raft and its transport log through)
// whose lines go to lg at their own level. hclog formats each line as
// "[LEVEL] name: message: key=value ..."; zapWriter takes the level off the front. Its
// lines carry no stack trace: it would be this adapter's, not raft's (a failed heartbeat
// to a dead voter logged 8 lines of it each time).
func newHCLog(lg *zap.Logger) hclog.Logger {
	level := hclog.Info
	if lg.Core().Enabled(zapcore.DebugLevel) {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Level: level, DisableTime: true,
		Output: &zapWriter{lg: lg.WithOptions(zap.AddStacktrace(zapcore.FatalLevel + 1))}})
}

// zapWriter is an io.Writer taking hclog's lines (one per Write) into zap.
type zapWriter struct {
	lg *zap.Logger
	mu sync.Mutex
}

var hclogLevels = []struct {
	tag   string
	level zapcore.Level
}{
	{"[TRACE]", zapcore.DebugLevel}, {"[DEBUG]", zapcore.DebugLevel},
	{"[INFO]", zapcore.InfoLevel}, {"[WARN]", zapcore.WarnLevel},
	{"[ERROR]", zapcore.ErrorLevel},
}

func (w *zapWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		level, msg := zapcore.InfoLevel, line
		for _, l := range hclogLevels {
			if rest, ok := bytes.CutPrefix(line, []byte(l.tag)); ok {
				level, msg = l.level, bytes.TrimLeft(rest, " ")
				break
			}
		}
		if ce := w.lg.Check(level, string(msg)); ce != nil {
			ce.Write()
		}
	}
	return len(p), nil
}
