package sim

// Setting a run's configuration by name: `sluice sim --set NAME=VALUE` (Config.Set), the
// simulator's own settings (SettingHelp) beside the broker's and topics'.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
)

// SettingHelp lists the simulator's own --set names (broker and topic settings are
// listed by broker.SettingNames).
var SettingHelp = []string{
	"faults=off                     no faults at all",
	"faults.<kind>=on|off           kind: crash restart slowdisk diskerrors clog reset",
	"                                     partition pause metaerrors readerrors rot",
	"                                     stalewrites; clusters (nodes>1) only:",
	"                                     split oneway quorumleader leaderpeers",
	"                                     diskloss powerloss (faults_cluster.go)",
	"                                     cascade (faults_cascade.go)",
	"faults.diskloss.lastisr=on|off disk loss may strike the only ISR member of a",
	"                                     partition below min.insync.replicas",
	"acks=0|1|all                   every producer; acks=1 is held to acks=all's",
	"                                     promise (the unsafe-settings check)",
	"faults.<kind>.every.ms=N       mean interval between faults of a kind",
	"faults.<kind>.for.ms=N         mean duration of one fault (downtime, spell)",
	"faults.skew.ms=N               wall-clock skew bound per node (0 = off)",
	"faults.metaunknown=P           chance a metadata proposal's outcome is unknown",
	"producer.acks=0|1|all          every producer (0 and 1 turn idempotence off)",
	"producer.idempotent=true|false every producer (true forces acks=all)",
	"producer.batch.max=N           records per batch, at most",
	"producers=N readers=N          number of clients (copies of the first one drawn)",
	"committers=N                   offset committers (committed offsets as registers)",
	"members=N                      consumer-group members (copies of the first one drawn:",
	"                                     one group; 0 turns groups off)",
	"admin=on|off                   admin changes during the run",
	"admin.deleterecords=on|off     half the admin changes are DeleteRecords",
	"admin.reassign=on|off          half the admin changes move a partition (clusters)",
	"deletes=on|off                 delete and re-create topics no group or committer uses",
	"deletes.every.ms=N             mean interval between topic deletions",
	"vandals=N                      clients sending malformed-but-CRC-valid batches",
	"audit=on|off                   the auditor: every other API, stale and hostile forms",
	"compaction=on|off              the compacted topic's writer, reader and checker",
	"codec=on|off                   pass messages through the wire codec",
	"heal.ms=N                      liveness budget after faults stop",
	"nodes=N                        cluster nodes (1..9; drawn: 3 on 70% of seeds, 1 on",
	"                                     20%, 5 on 10%; more than one: replicated,",
	"                                     controller and lifecycle on each node)",
	"io.mean.us=N io.floor.us=N     event-loop I/O latency per step / per operation",
	"                                     (io.mean.us=0: none)",
}

// Set overrides one setting by name: a simulator setting (SettingHelp) or a broker or
// topic setting that broker.Config.Set accepts.
func (c *Config) Set(name, value string) error {
	if ok, err := c.setSim(name, value); ok {
		return err
	}
	if isControllerSetting(name) {
		probe := controller.DefaultConfig()
		if _, err := probe.Set(name, value); err != nil {
			return fmt.Errorf("--set %s: %w", name, err)
		}
		c.Broker[name] = value
		return nil
	}
	probe := broker.DefaultConfig()
	if err := probe.Set(name, value); err != nil {
		return fmt.Errorf("--set %s: %w", name, err)
	}
	c.Broker[name] = value
	// A topic setting set for the run wins over the drawn per-topic overrides.
	for _, d := range broker.TopicConfigDefs {
		if name == d.Name || name == d.BrokerName {
			for _, t := range c.Topics {
				delete(t.Configs, d.Name)
			}
		}
	}
	return nil
}

func (c *Config) setSim(name, value string) (bool, error) {
	switch {
	case name == "faults":
		if value != "off" {
			return true, fmt.Errorf("faults: only \"off\" is accepted")
		}
		for _, s := range c.faultSpells() {
			s.On = false
		}
		c.Faults.ClockSkewMs, c.Faults.MetaUnknownChance = 0, 0
		return true, nil
	case name == "faults.metaunknown":
		p, err := strconv.ParseFloat(value, 64)
		if err != nil || p < 0 || p > 1 {
			return true, fmt.Errorf("faults.metaunknown: want a chance 0..1, got %q", value)
		}
		c.Faults.MetaUnknownChance = p
		return true, nil
	case name == "faults.diskloss.lastisr" || name == "acks":
		return true, c.setUnsafe(name, value)
	case name == "faults.skew.ms":
		return true, setInt64(&c.Faults.ClockSkewMs, value)
	case strings.HasPrefix(name, "faults."):
		return true, c.setFault(strings.TrimPrefix(name, "faults."), value)
	case strings.HasPrefix(name, "producer"):
		return true, c.setProducers(name, value)
	case name == "readers":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > 64 {
			return true, fmt.Errorf("readers: want 0..64, got %q", value)
		}
		c.Readers = resize(c.Readers, n)
		return true, nil
	case name == "readers.sessions":
		on, err := strconv.ParseBool(value)
		if err != nil {
			return true, fmt.Errorf("readers.sessions: want true or false, got %q", value)
		}
		for i := range c.Readers {
			c.Readers[i].Sessions = on
		}
		return true, nil
	case name == "committers":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > 64 {
			return true, fmt.Errorf("committers: want 0..64, got %q", value)
		}
		if n > 0 && len(c.Committers) == 0 {
			c.Committers = []CommitterSpec{{Topic: c.Topics[0].Name, Groups: 2, EveryMs: 50,
				TimeoutMs: 1000, ReadChance: 0.5}}
		}
		c.Committers = resize(c.Committers, n)
		return true, nil
	case name == "members":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > 64 {
			return true, fmt.Errorf("members: want 0..64, got %q", value)
		}
		if n > 0 && len(c.Members) == 0 {
			setGroupBroker(c, 100, 100)
			c.Members = []MemberSpec{{Group: "cg0", Topic: c.Topics[0].Name,
				Protocols: []string{"range", "roundrobin"}, SessionMs: 1000,
				RebalanceMs: 2000, TimeoutMs: 1000, BackoffMs: 50, CommitMs: 50,
				ChurnMs: 2000, StaleChance: 0.5}}
		}
		c.Members = resize(c.Members, n)
		return true, nil
	case name == "admin":
		on, err := onOff(value)
		c.Admin.On = on
		return true, err
	case name == "admin.deleterecords":
		on, err := onOff(value)
		c.Admin.TrimChance = 0
		if on {
			c.Admin.On, c.Admin.TrimChance = true, 0.5
		}
		return true, err
	case name == "admin.reassign":
		on, err := onOff(value)
		c.Admin.ReassignChance = 0
		if on {
			c.Admin.On, c.Admin.ReassignChance = true, 0.5
		}
		return true, err
	case name == "deletes":
		on, err := onOff(value)
		c.Deletes.On = on
		return true, err
	case name == "audit":
		on, err := onOff(value)
		c.Audit.On = on
		if c.Audit.EveryMs == 0 {
			c.Audit.EveryMs = 100
		}
		return true, err
	case name == "compaction":
		on, err := onOff(value)
		c.setCompact(on)
		return true, err
	case name == "deletes.every.ms":
		return true, setInt64(&c.Deletes.EveryMs, value)
	case name == "vandals":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > 16 {
			return true, fmt.Errorf("vandals: want 0..16, got %q", value)
		}
		for len(c.Vandals) < n {
			c.Vandals = append(c.Vandals, VandalSpec{Topic: c.Topics[0].Name, Acks: 1,
				EveryMs: 50, TimeoutMs: 1000})
		}
		c.Vandals = c.Vandals[:n]
		return true, nil
	case name == "quota.bytes":
		return true, setInt64(&c.Admin.QuotaBytes, value)
	case name == "quota.percent":
		p, err := strconv.ParseFloat(value, 64)
		if err != nil || !(p >= 0 && p <= 1e6) { // NaN and Inf too
			return true, fmt.Errorf("quota.percent: want a non-negative number, got %q", value)
		}
		c.Admin.QuotaPercent = p
		return true, nil
	case name == "codec":
		on, err := onOff(value)
		c.Codec = on
		return true, err
	case name == "heal.ms":
		return true, setInt64(&c.HealMs, value)
	case name == "nodes":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > maxPeerNodes {
			return true, fmt.Errorf("nodes: want 1..%d, got %q", maxPeerNodes, value)
		}
		c.Nodes = n
		return true, nil
	case name == "io.mean.us":
		return true, setInt64(&c.Timing.IOMeanUs, value)
	case name == "io.floor.us":
		return true, setInt64(&c.Timing.IOFloorUs, value)
	}
	if ok, err := c.setWide(name, value); ok {
		return true, err
	}
	if ok, err := c.setACLSetting(name, value); ok {
		return true, err
	}
	return c.setSyncStall(name, value)
}

func (c *Config) setFault(rest, value string) error {
	kind, field, _ := strings.Cut(rest, ".")
	s, ok := c.faultSpells()[kind]
	if !ok {
		return fmt.Errorf("faults.%s: unknown fault kind", kind)
	}
	switch field {
	case "":
		on, err := onOff(value)
		s.On = on
		return err
	case "every.ms":
		return setInt64(&s.EveryMs, value)
	case "for.ms":
		return setInt64(&s.ForMs, value)
	}
	return fmt.Errorf("faults.%s: unknown field %q", kind, field)
}

func (c *Config) setProducers(name, value string) error {
	if name == "producers" {
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || n > 64 {
			return fmt.Errorf("producers: want 0..64, got %q", value)
		}
		c.Producers = resize(c.Producers, n)
		return nil
	}
	for i := range c.Producers {
		p := &c.Producers[i]
		switch name {
		case "producer.acks":
			switch value {
			case "0", "1":
				p.Acks, p.Idempotent = int16(value[0]-'0'), false
			case "all", "-1":
				p.Acks = -1
			default:
				return fmt.Errorf("producer.acks: want 0, 1 or all, got %q", value)
			}
		case "producer.idempotent":
			on, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("producer.idempotent: %w", err)
			}
			p.Idempotent = on
			if on {
				p.Acks = -1
			}
		case "producer.batch.max":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > 1000 {
				return fmt.Errorf("producer.batch.max: want 1..1000, got %q", value)
			}
			p.BatchMax = n
		default:
			return fmt.Errorf("unknown producer setting %q", name)
		}
	}
	return nil
}

// resize grows a slice of client specs by copying its first element, or shrinks it.
func resize[T any](s []T, n int) []T {
	for len(s) < n && len(s) > 0 {
		s = append(s, s[0])
	}
	return s[:min(n, len(s))]
}

func onOff(v string) (bool, error) {
	switch v {
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("want on or off, got %q", v)
}

func setInt64(dst *int64, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("want a non-negative number, got %q", v)
	}
	*dst = n
	return nil
}
