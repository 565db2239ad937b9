package linearizability

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// A porcupine search that runs out of time proves nothing: it is counted, searched
// again once with RetryTimeout, and if that runs out too the history is unresolved,
// which fails the check (Report.OK) like a violation would. The budget is wall-clock
// time, so a loaded machine could turn a pass into a timeout (never the other way
// round): `make test` on two busy cores failed a seed whose search needs 11 CPU-seconds
// this way. The retry budget is therefore stretched by the machine's load per CPU
// (loadStretch, at most maxStretch times), so that only a search that is intractable
// on a quiet machine fails for lack of time.

// TimedOut is the result of a search that ran out of both budgets.
const TimedOut porcupine.CheckResult = "TimedOut"

// porcupineCheck is porcupine's search; tests replace it to model a slow search.
var porcupineCheck = porcupine.CheckOperationsTimeout

// search runs porcupine on ops with the first budget and, if that runs out, once more
// with the retry budget. It returns the result and how many budgets ran out (0–2).
func search(model porcupine.Model, ops []porcupine.Operation, opt Options) (
	porcupine.CheckResult, int) {
	res := porcupineCheck(model, ops, opt.Timeout)
	if res != porcupine.Unknown {
		return res, 0
	}
	res = porcupineCheck(model, ops, time.Duration(float64(opt.RetryTimeout)*loadStretch()))
	if res != porcupine.Unknown {
		return res, 1
	}
	return TimedOut, 2
}

// budgets fills in Options' default search budgets.
func (o *Options) budgets() {
	if o.Timeout == 0 {
		o.Timeout = 20 * time.Second
	}
	if o.RetryTimeout == 0 {
		o.RetryTimeout = 4 * o.Timeout
	}
}

// maxStretch caps loadStretch: past it a search is failed however busy the machine.
const maxStretch = 8

// loadStretch is the one-minute load average per CPU, between 1 and maxStretch; 1 where
// the load is unknown (no /proc/loadavg).
func loadStretch() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1
	}
	return stretchFor(string(b), runtime.NumCPU())
}

func stretchFor(loadavg string, cpus int) float64 {
	f := strings.Fields(loadavg)
	if len(f) == 0 || cpus < 1 {
		return 1
	}
	load, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 1
	}
	return min(max(load/float64(cpus), 1), maxStretch)
}
