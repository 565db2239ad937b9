package benchchart

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Figure is one FIGURE line: one step of one system in one configuration.
type Figure struct {
	System   string // "sluice", "nats-jetstream", "redis-streams"
	Config   string // the bracketed label of a peer's system, e.g. "fsync_always"
	Test     string // the step, e.g. "produce_acksall_p1"
	MsgsPerS float64
	P50, P99 time.Duration // zero when the line reports no latency
	Err      string        // the step's error, when the line says ERROR
	// A failover figure (test=failover_*, sluice bench cluster) has no rate: P50 and Max
	// are its p50_ms and max_ms over Rounds.
	Max    time.Duration
	Rounds int
}

// Run is one results file: its figures and what the CONTEXT lines say about the machine.
type Run struct {
	Figures   []Figure
	Date      string // the first CONTEXT date=
	CPUs      string
	LoadStart string // the first CONTEXT loadavg_start=
	LoadEnd   string // the last CONTEXT loadavg_end=
}

// Find returns the figure of system, config and test; ok is false when the run has none.
func (r Run) Find(system, config, test string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.System == system && f.Config == config && f.Test == test {
			return f, true
		}
	}
	return Figure{}, false
}

var (
	fieldRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)`)
	p50RE   = regexp.MustCompile(`(?i)\bp50[:=]\s*([0-9.,]+\s*(?:ns|us|µs|μs|ms|msec|s))`)
	p99RE   = regexp.MustCompile(`(?i)\bp99[:=]\s*([0-9.,]+\s*(?:ns|us|µs|μs|ms|msec|s))`)
)

// Parse reads a results file. Lines other than FIGURE and CONTEXT are ignored, so the
// whole output of scripts/bench.sh can be given; a FIGURE line without a system or test
// is an error naming its line number.
func Parse(in io.Reader) (Run, error) {
	var run Run
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "FIGURE "):
			f, err := parseFigure(line)
			if err != nil {
				return Run{}, fmt.Errorf("line %d: %w", n, err)
			}
			run.Figures = append(run.Figures, f)
		case strings.HasPrefix(line, "CONTEXT "):
			run.addContext(fields(line))
		}
	}
	return run, sc.Err()
}

func (r *Run) addContext(kv map[string]string) {
	first := func(dst *string, key string) {
		if v, ok := kv[key]; ok && *dst == "" {
			*dst = v
		}
	}
	first(&r.Date, "date")
	first(&r.CPUs, "cpus")
	first(&r.LoadStart, "loadavg_start")
	if v, ok := kv["loadavg_end"]; ok {
		r.LoadEnd = v
	}
}

func fields(line string) map[string]string {
	kv := map[string]string{}
	for _, m := range fieldRE.FindAllStringSubmatch(line, -1) {
		kv[m[1]] = strings.Trim(m[2], `"`)
	}
	return kv
}

func parseFigure(line string) (Figure, error) {
	kv := fields(line)
	f := Figure{System: kv["system"], Test: kv["test"]}
	if f.System == "" || f.Test == "" {
		return Figure{}, fmt.Errorf("FIGURE line without system= or test=: %q", line)
	}
	if i := strings.IndexByte(f.System, '['); i > 0 && strings.HasSuffix(f.System, "]") {
		f.System, f.Config = f.System[:i], f.System[i+1:len(f.System)-1]
	}
	if _, rest, ok := strings.Cut(line, " ERROR"); ok {
		f.Err = strings.TrimSpace(rest)
		if f.Err == "" {
			f.Err = "error"
		}
		return f, nil
	}
	if strings.HasPrefix(f.Test, "failover_") {
		return parseFailover(f, kv)
	}
	if f.Test == "compaction_clean" {
		return f, nil // MB/s cleaned (sluice bench compaction): not in the picture
	}
	if _, ok := kv["msgs_per_s"]; !ok && strings.HasPrefix(f.Test, "hostile_") {
		return f, nil // a count, not a rate (sluice bench hostile's connections and node)
	}
	rate, err := strconv.ParseFloat(kv["msgs_per_s"], 64)
	if err != nil {
		return Figure{}, fmt.Errorf("FIGURE %s %s: msgs_per_s: %w", f.System, f.Test, err)
	}
	f.MsgsPerS = rate
	f.P50 = latency(p50RE, line)
	f.P99 = latency(p99RE, line)
	return f, nil
}

// latency reads a duration as the three tools print it: Go's (150µs, 41.225ms),
// nats bench's (8,559.26us) or redis-benchmark's (0.167 msec). Zero when absent.
func latency(re *regexp.Regexp, line string) time.Duration {
	m := re.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	s := strings.NewReplacer(",", "", " ", "", "msec", "ms", "μs", "µs").Replace(m[1])
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}

func parseFailover(f Figure, kv map[string]string) (Figure, error) {
	ms := func(key string) (time.Duration, error) {
		v, err := strconv.ParseInt(kv[key], 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("FIGURE %s %s: %s=%q", f.System, f.Test, key, kv[key])
		}
		return time.Duration(v) * time.Millisecond, nil
	}
	var err error
	if f.P50, err = ms("p50_ms"); err != nil {
		return Figure{}, err
	}
	if f.Max, err = ms("max_ms"); err != nil {
		return Figure{}, err
	}
	if f.Rounds, err = strconv.Atoi(kv["rounds"]); err != nil || f.Rounds < 1 {
		return Figure{}, fmt.Errorf("FIGURE %s %s: rounds=%q", f.System, f.Test, kv["rounds"])
	}
	return f, nil
}
