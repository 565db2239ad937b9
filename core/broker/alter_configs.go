package broker

// AlterConfigs (key 33), versions 0–2.
//
// Replaces a topic's complete set of config overrides with the entries given (a config
// not listed goes back to the broker default). Per resource, answered in request order:
//   - the same resource twice in the request → INVALID_REQUEST for each;
//   - TOPIC: illegal name → INVALID_TOPIC_EXCEPTION; unknown → UNKNOWN_TOPIC_OR_PARTITION;
//     a config repeated → INVALID_REQUEST; unknown, null or invalid → INVALID_CONFIG, and
//     nothing of that resource changes;
//   - BROKER: INVALID_REQUEST, broker configs are static in this version (DescribeConfigs
//     still reads them); any other type: INVALID_REQUEST.
//
// Each changed topic gets one ConfigsAltered record with the full new override list,
// sorted by name; replicas pick the change up as it applies. ValidateOnly only checks.
// The reply waits for every commit.
//
// IncrementalAlterConfigs shares the machinery below (alterConfigs).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

func (ctl *adminController) handleAlterConfigs(r Request, m *kmsg.AlterConfigsRequest) {
	if ctl.forwardAdmin(r) { // to the controller's node (admin_forward.go)
		return
	}
	changes := make([]configChange, len(m.Resources))
	for i, res := range m.Resources {
		changes[i] = configChange{typ: res.ResourceType, name: res.ResourceName,
			set: res.Configs}
	}
	ctl.serialize(&opAlterConfigs{adminBase: adminBase{req: r}, changes: changes,
		validateOnly: m.ValidateOnly})
}

func alterConfigsResponse(m *kmsg.AlterConfigsRequest,
	results []alterResult) *kmsg.AlterConfigsResponse {
	resp := m.ResponseKind().(*kmsg.AlterConfigsResponse)
	for i, res := range m.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = results[i].code, results[i].msg
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// replaceOverrides is AlterConfigs' change: the given entries become the override list.
func replaceOverrides(in []kmsg.AlterConfigsRequestResourceConfig) ([]meta.Config, int16,
	string) {
	out := make([]meta.Config, 0, len(in))
	for _, c := range in {
		if code, msg := checkTopicConfig(c.Name, c.Value); code != 0 {
			return nil, code, msg
		}
		out = append(out, meta.Config{Name: c.Name, Value: *c.Value})
	}
	return out, 0, ""
}

// newOverrides computes a topic's complete new override list from the topic as it is
// when the operation runs, or returns a Kafka error code and message.
func (ctl *adminController) newOverrides(c configChange, t *meta.Topic) ([]meta.Config,
	int16, string) {
	if c.incremental {
		return ctl.incrementalOverrides(c.ops, t)
	}
	return replaceOverrides(c.set)
}

// configChange is one resource of an AlterConfigs or IncrementalAlterConfigs request.
type configChange struct {
	typ  kmsg.ConfigResourceType
	name string
	// The change: set replaces the overrides (AlterConfigs); with incremental, ops
	// apply in order to the current ones (IncrementalAlterConfigs).
	set         []kmsg.AlterConfigsRequestResourceConfig
	ops         []kmsg.IncrementalAlterConfigsRequestResourceConfig
	incremental bool
}

// alterResult is the answer for one resource.
type alterResult struct {
	code int16
	msg  *string
}

// alterConfigs checks every change against the image and proposes one ConfigsAltered
// record per changed topic (unless validateOnly); alterConfigsCommitted answers with
// one result per change once every record was answered.
func (ctl *adminController) alterConfigs(op *opAlterConfigs) {
	changes, validateOnly := op.changes, op.validateOnly
	results := make([]alterResult, len(changes))
	type key struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	counts := map[key]int{}
	for _, c := range changes {
		counts[key{c.typ, c.name}]++
	}
	var recs []meta.Record
	var at []int
	for i, c := range changes {
		if counts[key{c.typ, c.name}] > 1 {
			results[i] = alterResult{kerr.InvalidRequest.Code, strp(fmt.Sprintf(
				"Resource %s of type %v is named more than once", c.name, c.typ))}
			continue
		}
		rec, changed, code, msg := ctl.planAlter(c)
		if code != 0 {
			results[i] = alterResult{code, strp(msg)}
			continue
		}
		if changed && !validateOnly {
			recs = append(recs, rec)
			at = append(at, i)
		}
	}
	op.results, op.at = results, at
	ctl.proposeAll(op, recs) // then alterConfigsCommitted
}

// alterConfigsCommitted answers an AlterConfigs or IncrementalAlterConfigs request.
func (ctl *adminController) alterConfigsCommitted(op *opAlterConfigs) {
	for j, err := range op.errs {
		if err != nil {
			code, msg := commitFailure(err)
			op.results[op.at[j]] = alterResult{code, strp(msg)}
		}
	}
	switch m := op.req.Msg.(type) {
	case *kmsg.AlterConfigsRequest:
		ctl.reply(op.req, alterConfigsResponse(m, op.results))
	case *kmsg.IncrementalAlterConfigsRequest:
		ctl.reply(op.req, incrementalAlterConfigsResponse(m, op.results))
	default:
		core.Invariant(false, "B11", "config change for a %T", m)
	}
	ctl.adminFinished(op)
}

// planAlter validates one change and returns its record and whether it changes anything.
func (ctl *adminController) planAlter(c configChange) (meta.Record, bool, int16, string) {
	switch c.typ {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		return meta.Record{}, false, kerr.InvalidRequest.Code, "broker configs are static " +
			"in this version: set them in the node's config file and restart the node"
	default:
		return meta.Record{}, false, kerr.InvalidRequest.Code,
			fmt.Sprintf("Unsupported config resource type %v", c.typ)
	}
	if p := topicNameProblem(c.name); p != "" {
		return meta.Record{}, false, kerr.InvalidTopicException.Code, p
	}
	t := ctl.image.Topic(c.name)
	if t == nil {
		return meta.Record{}, false, kerr.UnknownTopicOrPartition.Code,
			fmt.Sprintf("Topic '%s' does not exist.", c.name)
	}
	next, code, msg := ctl.newOverrides(c, t)
	if code != 0 {
		return meta.Record{}, false, code, msg
	}
	next = sortConfigs(next)
	for i, cfg := range next {
		if i > 0 && next[i-1].Name == cfg.Name {
			return meta.Record{}, false, kerr.InvalidRequest.Code,
				"Error due to duplicate config keys: " + cfg.Name
		}
		if code, msg := checkTopicConfig(cfg.Name, &cfg.Value); code != 0 {
			return meta.Record{}, false, code, msg
		}
	}
	rec := meta.Record{Kind: meta.KindConfigsAltered, Topic: t.Name, Configs: next}
	return rec, !slices.Equal(next, t.Configs), 0, ""
}

// splitList parses a list-typed config value ("a,b, c").
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
