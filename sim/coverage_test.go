package sim

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/probe"
)

// TestCoverageReportIsNotEmpty runs default seeds with coverage on and requires the
// report to hold pairs and probes every sweep reaches, so that the report cannot go
// silently empty (a probe sink not wired, replies not counted).
func TestCoverageReportIsNotEmpty(t *testing.T) {
	to := uint64(20)
	if testing.Short() {
		to = 8
	}
	cov := NewCoverage()
	// The auditor on every seed: which seeds draw it changes whenever a new client is
	// drawn before it, and the pairs below are its. One node: a cluster drops the
	// auditor (cluster.go clusterClients).
	sets := [][2]string{{"nodes", "1"}, {"audit", "on"}}
	RunSeedsWith(1, to, 2, sets, 0, Options{Coverage: true}, func(r SeedRun) {
		if r.Err != nil || r.Coverage == nil {
			t.Fatalf("seed: err %v, coverage %v", r.Err, r.Coverage)
		}
		if !r.Result.Pass {
			t.Errorf("seed %d failed: %v", r.Result.Seed, r.Result.Failures)
		}
		cov.Add(r.Coverage)
	})
	if cov.Seeds != int(to) {
		t.Fatalf("coverage of %d seeds, want %d", cov.Seeds, to)
	}
	for _, p := range []Pair{
		{int16(kmsg.Produce), 0}, {int16(kmsg.Fetch), 0}, {int16(kmsg.Metadata), 0},
		{int16(kmsg.CreateTopics), 0}, {int16(kmsg.DeleteRecords), 0},
		{int16(kmsg.DescribeConfigs), 0}, {int16(kmsg.Fetch), kerr.FencedLeaderEpoch.Code},
		{int16(kmsg.Produce), kerr.InvalidRequiredAcks.Code},
	} {
		if cov.Pairs[p] == 0 {
			t.Errorf("pair %s never answered in %d seeds", p, to)
		}
	}
	names := probe.Names()
	count := map[string]uint64{}
	for id, n := range names {
		count[n] = cov.Probes.Count(probe.ID(id))
	}
	for _, n := range []string{"broker/fetch-parked", "broker/produce-waits-for-hwm",
		"replica/read-out-of-range", "group/join-member-id-required",
		"replica/delete-records-moved-start"} {
		if count[n] == 0 {
			t.Errorf("probe %s never hit in %d seeds", n, to)
		}
	}
	var out strings.Builder
	cov.WriteReport(&out)
	for _, want := range []string{"probes hit:", "Fetch NONE", "never hit:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCoverageChangesNothing: counting coverage draws no randomness and schedules no
// event, so a seed's trace is the same with and without it.
func TestCoverageChangesNothing(t *testing.T) {
	for _, seed := range []uint64{3, 4} {
		a := RunOne(seed, [][2]string{{"audit", "on"}}, 0, Options{})
		b := RunOne(seed, [][2]string{{"audit", "on"}}, 0, Options{Coverage: true})
		if a.Result.Trace != b.Result.Trace {
			t.Fatalf("seed %d: trace %s without coverage, %s with", seed, a.Result.Trace,
				b.Result.Trace)
		}
		if a.Coverage != nil || b.Coverage == nil || len(b.Coverage.Pairs) == 0 {
			t.Fatalf("seed %d: coverage %v without, %v with", seed, a.Coverage, b.Coverage)
		}
	}
}

// TestAuditorRecordsDeleteRecords: the auditor's DeleteRecords calls are listed for
// checkers of the log start offset, with their answers.
func TestAuditorRecordsDeleteRecords(t *testing.T) {
	cfg := Draw(5)
	if err := cfg.Set("audit", "on"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("nodes", "1"); err != nil { // a cluster drops the auditor
		t.Fatal(err)
	}
	cfg.Audit.EveryMs = 20
	w, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := w.Run()
	if !res.Pass {
		t.Fatalf("seed 5 with a busy auditor failed: %v", res.Failures)
	}
	calls := w.deleteRecordsCalls()
	answered := 0
	for _, c := range calls {
		if c.Done {
			answered++
			if c.Code == 0 && c.Offset >= 0 && c.LowWatermark < c.Offset {
				t.Errorf("call %+v: low watermark below the offset", c)
			}
		}
	}
	if len(calls) == 0 || answered == 0 {
		t.Fatalf("%d DeleteRecords calls, %d answered", len(calls), answered)
	}
}
