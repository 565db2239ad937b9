package sim

import (
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deletableTopics lists the topics the deleter may delete: those no committer or group
// member uses. Committed offsets of a deleted topic's partitions would vanish with it
// (as in Kafka), which the register checkers do not model; producers and readers cope
// with a topic going away and coming back.
func (c *Config) deletableTopics() []string {
	used := map[string]bool{}
	for _, cm := range c.Committers {
		used[cm.Topic] = true
	}
	for _, m := range c.Members {
		used[m.Topic] = true
	}
	var out []string
	for _, t := range c.Topics {
		if !used[t.Name] {
			out = append(out, t.Name)
		}
	}
	return out
}

// deleter deletes a topic now and then and re-creates it, as an operator resetting a
// topic would: DeleteTopics, a pause, CreateTopics with the topic's configs, then
// CreatePartitions up to every partition count the topic ever had (producers and
// readers only ever learn more partitions, so a smaller re-creation, such as a
// producer's auto-creation with num.partitions, would leave them writing to partitions
// that no longer exist). Every step is retried until it is answered; one whose outcome
// is unknown is simply followed by the next (CreateTopics then finds the topic, or not).
// A DeleteTopics whose outcome is unknown may still be in the network and land after
// the re-creation, deleting the topic again; so once the faults stop, a deleter that
// ever lost track of a delete waits for the network to drain and restores once more.
type deleter struct {
	clientBase
	spec     DeleteSpec
	admin    *admin
	topics   []TopicSpec
	step     int // 0 idle, 1 deleting, 2 re-creating, 3 growing
	topic    TopicSpec
	nextAt   int64
	busyReq  bool
	draining bool
	// unsure lists the topics of DeleteTopics requests whose outcome is unknown: they
	// may still land.
	unsure []TopicSpec
}

// restoreAfterHealMs is how long after the faults stop an unsure deleter waits before
// its last restore: the network delivers whatever was held within milliseconds.
const restoreAfterHealMs = 1000

const (
	delIdle = iota
	delDeleting
	delCreating
	delGrowing
)

func newDeleter(w *World, actor int32, a *admin) *deleter {
	d := &deleter{spec: w.cfg.Deletes, admin: a}
	d.clientBase = newClientBase(w, actor, "deleter", d.pump)
	names := map[string]bool{}
	for _, n := range w.cfg.deletableTopics() {
		names[n] = true
	}
	for _, t := range w.cfg.Topics {
		if names[t.Name] {
			d.topics = append(d.topics, t)
		}
	}
	return d
}

func (d *deleter) start()         { d.schedule(d.spec.EveryMs) }
func (d *deleter) heal()          { d.draining = true; d.wakeIn(0) }
func (d *deleter) timeout() int64 { return 3000 }

func (d *deleter) busy() string {
	if d.step != delIdle {
		return fmt.Sprintf("%s has not restored topic %s (step %d)", d.name, d.topic.Name,
			d.step)
	}
	return ""
}

func (d *deleter) schedule(meanMs int64) {
	d.nextAt = d.w.now + d.rnd.Exp(ms, max(meanMs, 1)*ms)
	d.wakeIn(d.nextAt - d.w.now)
}

func (d *deleter) pump() {
	if d.backingOff() || d.busyReq {
		return
	}
	if d.w.now < d.nextAt {
		d.wakeIn(d.nextAt - d.w.now)
		return
	}
	switch d.step {
	case delIdle:
		if d.draining && len(d.unsure) > 0 {
			d.topic, d.unsure, d.step = d.unsure[0], d.unsure[1:], delCreating
			d.nextAt = d.w.now + restoreAfterHealMs*ms
			d.wakeIn(restoreAfterHealMs * ms)
			return
		}
		if d.draining || len(d.topics) == 0 {
			return
		}
		d.topic = d.topics[d.rnd.Intn(len(d.topics))]
		d.step = delDeleting
		d.deleteTopic()
	case delDeleting:
		d.deleteTopic()
	case delCreating:
		d.createTopic()
	case delGrowing:
		d.grow()
	}
}

// done moves to step next after a wait of about meanMs, or retries after an error.
func (d *deleter) done(ok bool, next int, meanMs int64) {
	d.busyReq = false
	if !ok {
		d.backoffUntil = d.w.now + 100*ms
		d.wakeIn(100 * ms)
		return
	}
	d.step = next
	d.schedule(meanMs)
}

func (d *deleter) deleteTopic() {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = int32(d.timeout())
	req.TopicNames = []string{d.topic.Name}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(d.topic.Name)
	req.Topics = append(req.Topics, rt)
	d.busyReq = true
	d.send(req, d.timeout(), func(r kmsg.Response, err error) {
		ok := err != nil // unknown outcome: re-create whatever happened
		if err != nil && !slices.ContainsFunc(d.unsure, func(t TopicSpec) bool {
			return t.Name == d.topic.Name
		}) {
			d.unsure = append(d.unsure, d.topic)
		}
		if err == nil {
			for _, t := range r.(*kmsg.DeleteTopicsResponse).Topics {
				d.code("delete-topics", t.ErrorCode)
				ok = t.ErrorCode == 0 || t.ErrorCode == kerr.UnknownTopicOrPartition.Code
			}
		}
		d.done(ok, delCreating, d.spec.GapMs)
	})
}

// wantParts is every partition count the topic ever had (committed), at least its
// configured one: clients may know of all of them.
func (d *deleter) wantParts() int32 {
	want := max(d.topic.Partitions, d.admin.parts[d.topic.Name])
	if t := d.w.meta.topics[d.topic.Name]; t != nil {
		want = max(want, t.maxParts)
	}
	return want
}

func (d *deleter) createTopic() {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(d.timeout())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions = d.topic.Name, d.wantParts()
	rt.ReplicationFactor = d.w.cfg.replicationFactor()
	names := make([]string, 0, len(d.topic.Configs))
	for k := range d.topic.Configs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(d.topic.Configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	d.busyReq = true
	d.send(req, d.timeout(), func(r kmsg.Response, err error) {
		ok := false
		if err == nil {
			for _, t := range r.(*kmsg.CreateTopicsResponse).Topics {
				d.code("create-topics", t.ErrorCode)
				if t.ErrorCode == 0 {
					d.w.meta.checkReported(d.name, t.Topic, t.TopicID, max(t.NumPartitions, 0))
				}
				ok = t.ErrorCode == 0 || t.ErrorCode == kerr.TopicAlreadyExists.Code
			}
		}
		d.done(ok, delGrowing, 0)
	})
}

// grow raises the partition count to wantParts (INVALID_PARTITIONS: already there).
func (d *deleter) grow() {
	want := d.wantParts()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(d.timeout())
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = d.topic.Name, want
	req.Topics = append(req.Topics, rt)
	d.busyReq = true
	d.send(req, d.timeout(), func(r kmsg.Response, err error) {
		ok, gone := false, false
		if err == nil {
			for _, t := range r.(*kmsg.CreatePartitionsResponse).Topics {
				d.code("create-partitions", t.ErrorCode)
				ok = t.ErrorCode == 0 || t.ErrorCode == kerr.InvalidPartitions.Code
				gone = t.ErrorCode == kerr.UnknownTopicOrPartition.Code
			}
		}
		if gone {
			// A DeleteTopics whose outcome was unknown committed after CreateTopics
			// found the topic still there (TOPIC_ALREADY_EXISTS): create it again
			// rather than grow a topic that is gone (seed 3756 grew it forever).
			d.done(true, delCreating, 0)
			return
		}
		if ok && d.wantParts() > want {
			ok = false // partitions were added meanwhile: grow again
		}
		next, mean := delIdle, d.spec.EveryMs
		if d.draining {
			mean = 0
		}
		d.done(ok, next, mean)
	})
}
