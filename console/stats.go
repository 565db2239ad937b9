package console

import (
	"context"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// statsJSON is one sample for the live charts. The browser keeps the samples and takes
// rates from the difference between two: records produced (the sum of the high
// watermarks of every topic but the internal ones), offsets committed by groups, and the
// latency histograms' counts.
type statsJSON struct {
	Time       int64            `json:"time"` // ms since the epoch
	Produced   int64            `json:"produced"`
	Committed  int64            `json:"committed"`
	Lag        map[string]int64 `json:"lag"` // total lag by group
	Histograms []histogram      `json:"histograms"`
	Truncated  bool             `json:"truncated"`
}

// MaxStatsGroups bounds the groups one sample reads the lag of.
const MaxStatsGroups = 20

func (c *Console) stats(ctx context.Context, _ *http.Request) (any, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	out := statsJSON{Time: time.Now().UnixMilli(), Lag: map[string]int64{}}
	names := make([]string, 0, len(md.Topics))
	for _, td := range md.Topics.Sorted() {
		if td.IsInternal {
			continue // commits to __consumer_offsets are not produced records
		}
		if len(names) >= MaxTopics {
			out.Truncated = true
			break
		}
		names = append(names, td.Topic)
	}
	if len(names) > 0 {
		ends, err := c.adm.ListEndOffsets(ctx, names...)
		if err != nil {
			return nil, err
		}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil && o.Offset > 0 {
				out.Produced += o.Offset
			}
		})
	}
	listed, truncated, err := c.listGroups(ctx)
	if err != nil {
		return nil, err
	}
	out.Truncated = out.Truncated || truncated || len(listed) > MaxStatsGroups
	groups := make([]string, 0, MaxStatsGroups)
	for i, g := range listed {
		if i < MaxStatsGroups {
			groups = append(groups, g.Group)
		}
	}
	if len(groups) > 0 {
		lags, err := c.adm.Lag(ctx, groups...)
		if err != nil && len(lags) == 0 {
			return nil, err
		}
		for _, l := range lags.Sorted() {
			if l.Error() != nil {
				continue
			}
			out.Lag[l.Group] = l.Lag.Total()
			for _, ml := range l.Lag.Sorted() {
				if ml.Err == nil && ml.Commit.At > 0 {
					out.Committed += ml.Commit.At
				}
			}
		}
	}
	out.Histograms = c.gather().histograms()
	if out.Histograms == nil {
		out.Histograms = []histogram{}
	}
	return out, nil
}
