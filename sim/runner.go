package sim

import (
	"sync"
	"time"
)

// SeedRun is the outcome of one seed in a batch.
type SeedRun struct {
	Result Result
	Config Config
	Wall   time.Duration
	Err    error // the configuration was invalid
	// Coverage is what the run reached, with Options.Coverage (else nil).
	Coverage *Coverage
	world    *World // kept with Options.Timeline, for WriteTimeline
}

// RunOne draws the seed's configuration, applies the overrides (name=value pairs, in
// order) and runs it.
func RunOne(seed uint64, sets [][2]string, safetyMs int64, opts Options) SeedRun {
	cfg := Draw(seed)
	if safetyMs > 0 {
		cfg.SafetyMs = safetyMs
	}
	for _, kv := range sets {
		if err := cfg.Set(kv[0], kv[1]); err != nil {
			return SeedRun{Config: cfg, Err: err}
		}
	}
	start := time.Now()
	w, err := New(cfg, opts)
	if err != nil {
		return SeedRun{Config: cfg, Err: err}
	}
	res := w.Run()
	run := SeedRun{Result: res, Config: cfg, Wall: time.Since(start), Coverage: w.cov}
	if opts.Timeline {
		run.world = w
	}
	return run
}

// RunSeeds runs seeds [from, to] on `workers` goroutines, each world single-threaded
// and independent, and calls report for each finished seed in seed order.
func RunSeeds(from, to uint64, workers int, sets [][2]string, safetyMs int64,
	report func(SeedRun)) {
	RunSeedsWith(from, to, workers, sets, safetyMs, Options{}, report)
}

// RunSeedsWith is RunSeeds with options for every world (Verbose must stay nil: the
// worlds run concurrently).
func RunSeedsWith(from, to uint64, workers int, sets [][2]string, safetyMs int64,
	opts Options, report func(SeedRun)) {
	if workers < 1 {
		workers = 1
	}
	n := int(to - from + 1)
	results := make([]chan SeedRun, n)
	for i := range results {
		results[i] = make(chan SeedRun, 1)
	}
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] <- RunOne(from+uint64(i), sets, safetyMs, opts)
			}
		}()
	}
	for i := 0; i < n; i++ {
		report(<-results[i])
	}
	wg.Wait()
}
