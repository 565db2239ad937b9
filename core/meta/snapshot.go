package meta

// Snapshot returns records that rebuild the image from an empty one: one TopicCreated
// per topic (with its current partitions and config overrides), in name order, then
// the producer-id block if one was ever committed. A metadata log may store them in
// place of the records they summarise (core/broker Start.Snapshot); applying them gives
// an image equal to this one (Equal), though not the same count of applied records.
func (im *Image) Snapshot() []Record {
	names := im.TopicNames()
	out := make([]Record, 0, len(names)+1)
	for _, n := range names {
		t := im.topics[n]
		out = append(out, Record{Kind: KindTopicCreated, Topic: t.Name, TopicID: t.ID,
			Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor,
			Configs: append([]Config(nil), t.Configs...)})
	}
	if im.nextProducerID != 0 {
		out = append(out, Record{Kind: KindProducerIDBlock, NextProducerID: im.nextProducerID})
	}
	return out
}

// Equal says whether two images hold the same metadata (topics, their ids, partitions
// and overrides, and the next producer id).
func (im *Image) Equal(o *Image) bool {
	a, b := im.Snapshot(), o.Snapshot()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !recordsEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func recordsEqual(a, b Record) bool {
	if a.Kind != b.Kind || a.Topic != b.Topic || a.TopicID != b.TopicID ||
		a.Partitions != b.Partitions || a.ReplicationFactor != b.ReplicationFactor ||
		a.NextProducerID != b.NextProducerID || len(a.Configs) != len(b.Configs) {
		return false
	}
	for i := range a.Configs {
		if a.Configs[i] != b.Configs[i] {
			return false
		}
	}
	return true
}
