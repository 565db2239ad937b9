package sim

import (
	"fmt"
	"strconv"
)

// The wider workload of issue 7: request forms that exercise rules the other clients
// never reach (docs/simulation.md, "The wider workload"). Every choice is drawn after
// every older one in Draw, so a seed's older choices stay as they were; a field at its
// zero value turns its form off and draws nothing at run time, so a seed that draws
// none of them keeps its trace.

// ZombieSpec configures the zombie producer (zombie.go): an idempotent producer that
// bumps its epoch now and then while a copy of its previous session keeps sending.
type ZombieSpec struct {
	On        bool
	Topic     string
	EveryMs   int64 // mean time between rounds
	TimeoutMs int64
	BackoffMs int64
}

// drawWider draws the wider workload's choices; Draw calls it after every older draw.
func drawWider(r *Rand, c *Config) {
	// Readers that sometimes fetch with limits smaller than a batch (KIP-74).
	for i := range c.Readers {
		if r.Chance(0.5) {
			c.Readers[i].TinyChance = Pick(r, 0.1, 0.3)
		}
	}
	if r.Chance(0.5) {
		c.Zombie = ZombieSpec{On: true, Topic: c.Topics[r.Intn(len(c.Topics))].Name,
			EveryMs: Pick[int64](r, 20, 100, 400), TimeoutMs: Pick[int64](r, 500, 3000),
			BackoffMs: Pick[int64](r, 10, 100)}
	}
	for i := range c.Vandals {
		if r.Chance(0.7) {
			c.Vandals[i].BadCRCChance = Pick(r, 0.2, 0.5)
		}
	}
	if r.Chance(0.8) {
		c.Audit.FreshTrimChance = Pick(r, 0.1, 0.3)
	}
}

// tinyFetchLimits are the PartitionMaxBytes and MaxBytes of a reader's small fetch:
// below the size of most batches (a one-record batch is about 90 bytes).
func tinyFetchLimits(r *Rand) (part, total int32) {
	return int32(Pick(r, 1, 40, 100)), int32(Pick(r, 1, 60, 200))
}

// wideHelp lists the --set names of the wider workload.
var wideHelp = []string{
	"zombie=on|off                  the zombie producer (epoch bumps, stale-epoch writes)",
	"reader.tiny.chance=P           per fetch: limits smaller than a batch (KIP-74)",
	"vandal.badcrc.chance=P         per vandal batch: well-formed records, wrong CRC",
	"audit.freshtrim.chance=P       per auditor step: acks=1 write, then DeleteRecords to its end",
}

func init() { SettingHelp = append(SettingHelp, wideHelp...) }

// setWide applies a --set name of the wider workload.
func (c *Config) setWide(name, value string) (bool, error) {
	switch name {
	case "zombie":
		on, err := onOff(value)
		c.Zombie.On = on
		if on && c.Zombie.EveryMs == 0 {
			c.Zombie = ZombieSpec{On: true, Topic: c.Topics[0].Name, EveryMs: 50,
				TimeoutMs: 1000, BackoffMs: 50}
		}
		return true, err
	case "reader.tiny.chance":
		p, err := chance(name, value)
		for i := range c.Readers {
			c.Readers[i].TinyChance = p
		}
		return true, err
	case "vandal.badcrc.chance":
		p, err := chance(name, value)
		for i := range c.Vandals {
			c.Vandals[i].BadCRCChance = p
		}
		return true, err
	case "audit.freshtrim.chance":
		p, err := chance(name, value)
		c.Audit.FreshTrimChance = p
		return true, err
	}
	return false, nil
}

func chance(name, v string) (float64, error) {
	p, err := strconv.ParseFloat(v, 64)
	if err != nil || p < 0 || p > 1 {
		return 0, fmt.Errorf("%s: want a chance in [0, 1], got %q", name, v)
	}
	return p, nil
}
