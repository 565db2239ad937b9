package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/twmb/franz-go/pkg/kadm"
	"go.uber.org/zap"
)

// admin guards an action that changes the cluster: 403 unless the console runs with
// Options.Admin; then the request must come from the console's own page (a JSON body,
// no foreign Origin, not a cross-site fetch) and carry "confirm": true.
func (c *Console) admin(f func(ctx context.Context, r *http.Request, body []byte) (any,
	error)) apiFunc {
	return func(ctx context.Context, r *http.Request) (any, error) {
		if !c.opts.Admin {
			return nil, errf(http.StatusForbidden, "the console is read-only: start the "+
				"node with --console-admin to enable admin actions")
		}
		if err := sameOrigin(r); err != nil {
			return nil, err
		}
		body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBodyBytes))
		if err != nil {
			return nil, errf(http.StatusRequestEntityTooLarge,
				"request body larger than %d bytes", MaxBodyBytes)
		}
		var conf struct {
			Confirm bool `json:"confirm"`
		}
		if err := json.Unmarshal(body, &conf); err != nil {
			return nil, errf(http.StatusBadRequest, "the body is not a JSON object: %v", err)
		}
		if !conf.Confirm {
			return nil, errf(http.StatusBadRequest, `an admin action needs "confirm": true`)
		}
		v, err := f(ctx, r, body)
		if err == nil {
			c.lg.Info("console admin action", zap.String("path", r.URL.Path),
				zap.String("body", string(body)))
		}
		return v, err
	}
}

func sameOrigin(r *http.Request) *httpError {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errf(http.StatusUnsupportedMediaType, "admin requests are application/json")
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return errf(http.StatusForbidden, "cross-site admin request refused")
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return errf(http.StatusForbidden, "admin request from origin %.80q refused", o)
		}
	}
	return nil
}

func decodeStrict(body []byte, v any) *httpError {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return errf(http.StatusBadRequest, "malformed request: %v", err)
	}
	return nil
}

func (c *Console) createTopic(ctx context.Context, _ *http.Request, body []byte) (any,
	error) {
	var req struct {
		Confirm           bool              `json:"confirm"`
		Name              string            `json:"name"`
		Partitions        int32             `json:"partitions"`
		ReplicationFactor int16             `json:"replicationFactor"`
		Configs           map[string]string `json:"configs"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	if !topicName.MatchString(req.Name) || req.Name == "." || req.Name == ".." {
		return nil, errf(http.StatusBadRequest, "invalid topic name %.60q", req.Name)
	}
	if req.Partitions == 0 {
		req.Partitions = -1 // the broker's num.partitions
	}
	if req.ReplicationFactor == 0 {
		req.ReplicationFactor = -1 // the broker's default.replication.factor
	}
	if len(req.Configs) > 64 {
		return nil, errf(http.StatusBadRequest, "at most 64 configs")
	}
	cfg := map[string]*string{}
	for k, v := range req.Configs {
		cfg[k] = &v
	}
	resp, err := c.adm.CreateTopic(ctx, req.Partitions, req.ReplicationFactor, cfg, req.Name)
	if err != nil {
		return nil, withMessage(err, resp.ErrMessage)
	}
	return map[string]any{"created": resp.Topic, "partitions": resp.NumPartitions,
		"replicationFactor": resp.ReplicationFactor}, nil
}

func (c *Console) alterConfigs(ctx context.Context, r *http.Request, body []byte) (any,
	error) {
	td, err := c.topicDetail(ctx, r)
	if err != nil {
		return nil, err
	}
	var req struct {
		Confirm bool               `json:"confirm"`
		Set     map[string]*string `json:"set"` // null: back to the default
	}
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	if len(req.Set) == 0 || len(req.Set) > 64 {
		return nil, errf(http.StatusBadRequest, `"set" needs 1 to 64 configs`)
	}
	var alters []kadm.AlterConfig
	for k, v := range req.Set {
		op := kadm.SetConfig
		if v == nil {
			op = kadm.DeleteConfig
		}
		alters = append(alters, kadm.AlterConfig{Op: op, Name: k, Value: v})
	}
	resps, err := c.adm.AlterTopicConfigs(ctx, alters, td.Topic)
	if err != nil {
		return nil, err
	}
	for _, rs := range resps {
		if rs.Err != nil {
			return nil, withMessage(rs.Err, rs.ErrMessage)
		}
	}
	return map[string]any{"altered": td.Topic}, nil
}

// resetOffsets commits new offsets for a group with no members (Kafka's rule for
// kafka-consumer-groups --reset-offsets): to the earliest or latest offset, or a given
// one, for one partition or all of a topic.
func (c *Console) resetOffsets(ctx context.Context, r *http.Request, body []byte) (any,
	error) {
	group, herr := groupParam(r)
	if herr != nil {
		return nil, herr
	}
	var req struct {
		Confirm   bool   `json:"confirm"`
		Topic     string `json:"topic"`
		Partition *int32 `json:"partition"` // nil: every partition
		To        string `json:"to"`        // earliest, latest or offset
		Offset    int64  `json:"offset"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	if !topicName.MatchString(req.Topic) {
		return nil, errf(http.StatusBadRequest, "invalid topic name %.60q", req.Topic)
	}
	lags, err := c.adm.Lag(ctx, group)
	if err != nil {
		return nil, err
	}
	l, ok := lags[group]
	if !ok || l.State == "Dead" {
		return nil, errf(http.StatusNotFound, "unknown group %q", group)
	}
	if l.State != "Empty" {
		return nil, errf(http.StatusConflict, "group %q is %s: stop its consumers first "+
			"(offsets can be reset only while a group has no members)", group, l.State)
	}
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[req.Topic]
	if !ok || td.Err != nil {
		return nil, errf(http.StatusNotFound, "unknown topic %q", req.Topic)
	}
	starts, ends := c.offsets(ctx, req.Topic)
	offs := kadm.Offsets{}
	for p := range td.Partitions {
		if req.Partition != nil && *req.Partition != p {
			continue
		}
		st, ok1 := starts.Lookup(req.Topic, p)
		en, ok2 := ends.Lookup(req.Topic, p)
		if !ok1 || !ok2 || st.Err != nil || en.Err != nil {
			return nil, errf(http.StatusBadGateway, "could not list offsets of %s-%d",
				req.Topic, p)
		}
		at := req.Offset
		switch req.To {
		case "earliest":
			at = st.Offset
		case "latest":
			at = en.Offset
		case "offset":
			if at < st.Offset || at > en.Offset {
				return nil, errf(http.StatusRequestedRangeNotSatisfiable, "offset %d is "+
					"outside %s-%d, which holds offsets %d to %d", at, req.Topic, p,
					st.Offset, en.Offset-1)
			}
		default:
			return nil, errf(http.StatusBadRequest, `"to" is earliest, latest or offset`)
		}
		offs.Add(kadm.Offset{Topic: req.Topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	if len(offs) == 0 {
		return nil, errf(http.StatusNotFound, "topic %q has no such partition", req.Topic)
	}
	resps, err := c.adm.CommitOffsets(ctx, group, offs)
	if err != nil {
		return nil, err
	}
	if err := resps.Error(); err != nil {
		return nil, err
	}
	n := 0
	resps.Each(func(kadm.OffsetResponse) { n++ })
	return map[string]any{"group": group, "reset": n}, nil
}

// withMessage adds the broker's error message to a Kafka error.
func withMessage(err error, msg string) error {
	if msg == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}
