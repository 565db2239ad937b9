package linearizability

import (
	"time"

	"github.com/anishathalye/porcupine"
)

// A porcupine search that runs out of time proves nothing: it is counted, searched
// again once with RetryTimeout, and if that runs out too the history is unresolved,
// which fails the check (Report.OK) like a violation would. The budget is wall-clock
// time, so a loaded machine can turn a pass into a timeout; never the other way round.

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
	res = porcupineCheck(model, ops, opt.RetryTimeout)
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
