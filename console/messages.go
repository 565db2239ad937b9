package console

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bytesJSON previews a key, value or header value: its size, the text when it is UTF-8
// (first PreviewBytes), whether the whole of it is JSON, and hex (first HexBytes).
type bytesJSON struct {
	Size      int    `json:"size"`
	UTF8      bool   `json:"utf8"`
	JSON      bool   `json:"json"`
	Text      string `json:"text,omitempty"`
	Hex       string `json:"hex"`
	Truncated bool   `json:"truncated"`
}

func preview(b []byte) *bytesJSON {
	if b == nil {
		return nil // a null key, or a tombstone
	}
	p := &bytesJSON{Size: len(b), UTF8: utf8.Valid(b)}
	p.JSON = p.UTF8 && len(b) > 0 && json.Valid(b)
	if p.UTF8 {
		t := b
		if len(t) > PreviewBytes {
			t = t[:PreviewBytes]
			for len(t) > 0 && !utf8.Valid(t) { // do not cut a character in two
				t = t[:len(t)-1]
			}
			p.Truncated = true
		}
		p.Text = string(t)
	}
	h := b
	if len(h) > HexBytes {
		h = h[:HexBytes]
		p.Truncated = true
	}
	p.Hex = hex.EncodeToString(h)
	return p
}

type headerJSON struct {
	Key   string     `json:"key"`
	Value *bytesJSON `json:"value"`
}

type recordJSON struct {
	Offset      int64        `json:"offset"`
	Timestamp   int64        `json:"timestamp"` // ms since the epoch
	Time        string       `json:"time"`
	LeaderEpoch int32        `json:"leaderEpoch"`
	Key         *bytesJSON   `json:"key"`
	Value       *bytesJSON   `json:"value"`
	Headers     []headerJSON `json:"headers"`
}

type messagesJSON struct {
	Topic       string       `json:"topic"`
	Partition   int32        `json:"partition"`
	From        int64        `json:"from"` // the offset read from
	StartOffset int64        `json:"startOffset"`
	EndOffset   int64        `json:"endOffset"` // high watermark
	Records     []recordJSON `json:"records"`
	Next        int64        `json:"next"`      // the offset to read the next page from
	Truncated   bool         `json:"truncated"` // stopped at the record or byte cap
}

// messages reads records of one partition from an offset, from the first offset at or
// after a timestamp, or (neither given) the newest ones; at most limit records and
// about maxBytes of keys, values and headers.
func (c *Console) messages(ctx context.Context, r *http.Request) (any, error) {
	td, err := c.topicDetail(ctx, r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	if q.Get("partition") == "" {
		return nil, errf(http.StatusBadRequest, "partition is required")
	}
	part, herr := intParam(r, "partition", 0, int64(len(td.Partitions))-1, 0)
	if herr != nil {
		return nil, herr
	}
	offset, herr := intParam(r, "offset", 0, math.MaxInt64, -1)
	if herr != nil {
		return nil, herr
	}
	ts, herr := intParam(r, "timestamp", 0, math.MaxInt64/2, -1)
	if herr != nil {
		return nil, herr
	}
	if offset >= 0 && ts >= 0 {
		return nil, errf(http.StatusBadRequest, "give offset or timestamp, not both")
	}
	limit, herr := intParam(r, "limit", 1, MaxRecords, DefaultRecords)
	if herr != nil {
		return nil, herr
	}
	maxBytes, herr := intParam(r, "maxBytes", 1, MaxReadBytes, DefaultReadBytes)
	if herr != nil {
		return nil, herr
	}
	p := int32(part)
	pd := td.Partitions[p]
	if pd.Leader < 0 {
		return nil, errf(http.StatusServiceUnavailable, "partition %s-%d has no leader",
			td.Topic, p)
	}
	starts, ends := c.offsets(ctx, td.Topic)
	st, ok1 := starts.Lookup(td.Topic, p)
	en, ok2 := ends.Lookup(td.Topic, p)
	if !ok1 || !ok2 || st.Err != nil || en.Err != nil {
		return nil, errf(http.StatusBadGateway, "could not list the offsets of %s-%d",
			td.Topic, p)
	}
	out := messagesJSON{Topic: td.Topic, Partition: p, StartOffset: st.Offset,
		EndOffset: en.Offset, Records: []recordJSON{}}
	switch {
	case offset >= 0:
		if offset < st.Offset || offset > en.Offset {
			return nil, errf(http.StatusRequestedRangeNotSatisfiable, "offset %d is outside "+
				"partition %s-%d, which holds offsets %d to %d", offset, td.Topic, p,
				st.Offset, en.Offset-1)
		}
	case ts >= 0:
		lo, err := c.adm.ListOffsetsAfterMilli(ctx, ts, td.Topic)
		if err != nil {
			return nil, err
		}
		o, ok := lo.Lookup(td.Topic, p)
		if !ok || o.Err != nil {
			return nil, errf(http.StatusBadGateway, "could not find an offset by timestamp")
		}
		offset = o.Offset
		if offset < 0 || offset > en.Offset {
			offset = en.Offset // no record at or after ts
		}
	default:
		offset = max(st.Offset, en.Offset-limit)
	}
	out.From, out.Next = offset, offset
	if offset >= en.Offset {
		return out, nil
	}
	recs, err := c.fetch(ctx, td.Topic, p, pd.Leader, offset, int32(maxBytes))
	if err != nil {
		return nil, err
	}
	used := int64(0)
	for _, rec := range recs {
		if rec.Offset < offset || rec.Offset >= en.Offset {
			continue
		}
		size := int64(len(rec.Key) + len(rec.Value))
		for _, h := range rec.Headers {
			size += int64(len(h.Key) + len(h.Value))
		}
		if int64(len(out.Records)) >= limit || (len(out.Records) > 0 && used+size > maxBytes) {
			out.Truncated = true
			break
		}
		used += size
		out.Records = append(out.Records, toJSON(rec))
		out.Next = rec.Offset + 1
	}
	return out, nil
}

// fetch sends one Fetch for the partition to its leader, answered at once, of at most
// maxBytes (Kafka still returns a first batch larger than that whole, up to the
// topic's max.message.bytes), and decodes its records.
func (c *Console) fetch(ctx context.Context, topic string, p, leader int32, offset int64,
	maxBytes int32) ([]*kgo.Record, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = maxBytes
	req.IsolationLevel = 1 // read committed: what a consumer would see
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = maxBytes
	rp.LogStartOffset = -1
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.cl.Broker(int(leader)))
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			if t.Topic != topic || rp.Partition != p {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				if err == kerr.OffsetOutOfRange {
					return nil, errf(http.StatusRequestedRangeNotSatisfiable,
						"offset %d is outside partition %s-%d", offset, topic, p)
				}
				return nil, err
			}
			fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset: offset, Topic: topic, Partition: p,
				IsolationLevel: kgo.ReadCommitted()}, rp, kgo.DefaultDecompressor(), nil)
			if fp.Err != nil && len(fp.Records) == 0 {
				return nil, fp.Err
			}
			return fp.Records, nil
		}
	}
	return nil, nil
}

func toJSON(rec *kgo.Record) recordJSON {
	out := recordJSON{Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(),
		Time: rec.Timestamp.UTC().Format(time.RFC3339Nano), LeaderEpoch: rec.LeaderEpoch,
		Key: preview(rec.Key), Value: preview(rec.Value), Headers: []headerJSON{}}
	for _, h := range rec.Headers {
		out.Headers = append(out.Headers, headerJSON{Key: h.Key, Value: preview(h.Value)})
	}
	return out
}
