package broker

// IncrementalAlterConfigs (key 44), versions 0–1.
//
// Changes single topic configs, leaving the other overrides alone. Operations:
//   - SET (0): set the override (null value → INVALID_REQUEST);
//   - DELETE (1): remove the override, back to the broker default;
//   - APPEND (2) / SUBTRACT (3): add / remove comma-separated values of a list config
//     (cleanup.policy), starting from its current value; on other configs →
//     INVALID_REQUEST, as Kafka answers.
//
// A config named twice in one resource or an unknown operation → INVALID_REQUEST; an
// unknown config or a resulting value that is invalid → INVALID_CONFIG. Any error leaves
// that resource unchanged. Resource types, duplicate resources, ValidateOnly and the
// commit are as for AlterConfigs (alter_configs.go): one ConfigsAltered record with the
// full new override list per changed topic; BROKER resources → INVALID_REQUEST.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

func (ctl *adminController) handleIncrementalAlterConfigs(r Request,
	m *kmsg.IncrementalAlterConfigsRequest) {
	if ctl.forwardAdmin(r) { // to the controller's node (admin_forward.go)
		return
	}
	changes := make([]configChange, len(m.Resources))
	for i, res := range m.Resources {
		changes[i] = configChange{typ: res.ResourceType, name: res.ResourceName,
			ops: res.Configs, incremental: true}
	}
	ctl.serialize(&opAlterConfigs{adminBase: adminBase{req: r}, changes: changes,
		validateOnly: m.ValidateOnly})
}

func incrementalAlterConfigsResponse(m *kmsg.IncrementalAlterConfigsRequest,
	results []alterResult) *kmsg.IncrementalAlterConfigsResponse {
	resp := m.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for i, res := range m.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = results[i].code, results[i].msg
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// incrementalOverrides applies the operations, in order, to the topic's overrides.
func (ctl *adminController) incrementalOverrides(
	ops []kmsg.IncrementalAlterConfigsRequestResourceConfig,
	t *meta.Topic) ([]meta.Config, int16, string) {
	cur := map[string]string{}
	for _, c := range t.Configs {
		cur[c.Name] = c.Value
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Name] {
			return nil, kerr.InvalidRequest.Code,
				"Error due to duplicate config keys: " + op.Name
		}
		seen[op.Name] = true
		if LookupTopicConfig(op.Name) == nil {
			return nil, kerr.InvalidConfig.Code,
				fmt.Sprintf("Unknown topic config name: %s", op.Name)
		}
		if code, msg := ctl.applyOp(cur, op); code != 0 {
			return nil, code, msg
		}
	}
	out := make([]meta.Config, 0, len(cur))
	for n, v := range cur {
		out = append(out, meta.Config{Name: n, Value: v})
	}
	return sortConfigs(out), 0, ""
}

// applyOp applies one operation to cur (config name → override).
func (ctl *adminController) applyOp(cur map[string]string,
	op kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	switch op.Op {
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(cur, op.Name)
		return 0, ""
	case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpAppend,
		kmsg.IncrementalAlterConfigOpSubtract:
	default:
		return kerr.InvalidRequest.Code,
			fmt.Sprintf("Unknown operation %d for config %s", op.Op, op.Name)
	}
	if op.Value == nil {
		return kerr.InvalidRequest.Code, "Null value not supported for : " + op.Name
	}
	if op.Op == kmsg.IncrementalAlterConfigOpSet {
		cur[op.Name] = *op.Value
		return 0, ""
	}
	if configType(op.Name) != kmsg.ConfigTypeList {
		return kerr.InvalidRequest.Code, fmt.Sprintf(
			"Config value append/subtract is not allowed for config key: %s", op.Name)
	}
	base, ok := cur[op.Name]
	if !ok {
		base = ctl.cfg.TopicDefaults[op.Name] // no override (or one deleted by an earlier op)
	}
	list := splitList(base)
	for _, v := range splitList(*op.Value) {
		i := slices.Index(list, v)
		switch {
		case op.Op == kmsg.IncrementalAlterConfigOpAppend && i < 0:
			list = append(list, v)
		case op.Op == kmsg.IncrementalAlterConfigOpSubtract && i >= 0:
			list = slices.Delete(list, i, i+1)
		}
	}
	cur[op.Name] = strings.Join(list, ",")
	return 0, ""
}
