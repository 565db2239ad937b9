package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

// The ACL workload (issue 10, item 7; docs/simulation.md "ACLs and quotas"): the
// brokers run with the authorizer on; an admin with a super-user principal creates a
// topic of its own (aclTopic), grants principals on it, and revokes and re-grants them
// while the faults run; clients with those principals produce to it and read it
// (acl_clients.go); the checker (acl_check.go) holds every answer they get to the ACLs
// the answering node had applied when it handled the request.
//
// The rest of the run is not touched: allow.everyone.if.no.acl.found is on, and the
// only bindings are on aclTopic, so the other clients (anonymous) keep every right they
// had. The ACL clients' writes are not part of the linearizability history; they have
// checks of their own.

// aclsByDefault: whether the seeds that draw the workload run it (on since session 18;
// docs/simulation.md). `--set acls=on|off` forces it for any seed.
const aclsByDefault = true

// aclTopic is the topic the ACL workload protects; aclSuperUser the admin's principal.
const (
	aclTopic     = "acl0"
	aclSuperUser = "User:sim-admin"
)

// aclPrincipals are the ACL clients' principals; the last one is never revoked and is
// the client whose client id gets the produce quota (ACLSpec.QuotaBytes).
var aclPrincipals = []string{"User:alice", "User:bob", "User:carol"}

// aclClientName is the client name (and Kafka client id) of the ACL client of
// principal p: "acl-alice" for User:alice.
func aclClientName(p string) string { return "acl-" + p[len("User:"):] }

// ACLSpec configures the ACL workload.
type ACLSpec struct {
	On bool
	// EveryMs: mean time between grant changes (a revocation or a re-grant of one of
	// the revocable principals).
	EveryMs int64
	// QuotaBytes > 0: producer_byte_rate of the last ACL client's client id
	// (AlterClientQuotas), small enough that it is throttled.
	QuotaBytes int64
}

// aclBrokerSettings are the broker settings the workload needs.
var aclBrokerSettings = map[string]string{"authorizer.class.name": "sluice",
	"super.users": aclSuperUser, "allow.everyone.if.no.acl.found": "true"}

// drawACLs draws the workload, after every older choice (a seed's other choices stay).
func drawACLs(r *Rand, c *Config) {
	on := r.Chance(0.3)
	every := Pick[int64](r, 100, 400, 1500)
	quota := Pick[int64](r, 0, 300, 1000)
	if on && aclsByDefault {
		c.setACLs(true)
		c.ACLs.EveryMs, c.ACLs.QuotaBytes = every, quota
	}
}

// setACLs turns the workload on or off, with its broker settings.
func (c *Config) setACLs(on bool) {
	c.ACLs.On = on
	for k, v := range aclBrokerSettings {
		if on {
			c.Broker[k] = v
		} else {
			delete(c.Broker, k)
		}
	}
	if c.ACLs.EveryMs == 0 {
		c.ACLs.EveryMs = 300
	}
}

var aclHelp = []string{
	"acls=on|off                    the ACL workload: authorizer on, principals granted,",
	"                                     revoked and re-granted on topic acl0 (acls.go)",
	"acls.every.ms=N                mean interval between grant changes",
	"acls.quota.bytes=N             producer_byte_rate of client id acl-carol (0: none)",
}

func init() { SettingHelp = append(SettingHelp, aclHelp...) }

// setACLSetting handles the acls.* settings.
func (c *Config) setACLSetting(name, value string) (bool, error) {
	switch name {
	case "acls":
		on, err := onOff(value)
		if err == nil {
			c.setACLs(on)
		}
		return true, err
	case "acls.every.ms":
		err := setInt64(&c.ACLs.EveryMs, value)
		if err == nil && c.ACLs.EveryMs == 0 {
			err = fmt.Errorf("acls.every.ms: want at least 1")
		}
		return true, err
	case "acls.quota.bytes":
		return true, setInt64(&c.ACLs.QuotaBytes, value)
	}
	return false, nil
}

// aclSummary is the summary line of the workload ("" when off).
func (c Config) aclSummary() string {
	if !c.ACLs.On {
		return ""
	}
	return fmt.Sprintf("acls: every~%dms quota(%s)=%dB/s principals=%v", c.ACLs.EveryMs,
		aclClientName(aclPrincipals[len(aclPrincipals)-1]), c.ACLs.QuotaBytes, aclPrincipals)
}

// aclAdmin creates aclTopic, grants every ACL principal DESCRIBE, WRITE and READ on it,
// sets the quota, then revokes (DeleteAcls) and re-grants (CreateAcls) WRITE and READ
// of the revocable principals, one change at a time, until the heal; at the heal it
// grants everything back.
type aclAdmin struct {
	clientBase
	spec     ACLSpec
	stage    int // 0 create the topic, 1 grant all, 2 quota, 3 changes
	busyReq  bool
	draining bool
	granted  map[string]bool // what the admin last made of each revocable principal
	want     string          // the principal a failed change is retried for ("": none)
	wantOn   bool
}

func newACLAdmin(w *World, actor int32) *aclAdmin {
	a := &aclAdmin{spec: w.cfg.ACLs, granted: map[string]bool{}}
	a.clientBase = newClientBase(w, actor, "acl-admin", a.pump)
	a.principal = aclSuperUser
	return a
}

func (a *aclAdmin) start() { a.wakeIn(0) }
func (a *aclAdmin) heal() {
	a.draining = true
	a.wakeIn(0)
}

// busy holds the final read back until the admin's setup (topic, grants, quota) is
// done and, draining, every revoked principal is granted again: the liveness of ACL
// and quota changes once the faults stop, and the precondition of the quota client's
// own (seeds 4977, 4987: the quota was set during the final read, which did not wait
// for it, and the client, already caught up, had no time left to produce).
func (a *aclAdmin) busy() string {
	switch {
	case a.stage < 3:
		return fmt.Sprintf("acl-admin has not finished its setup (stage %d)", a.stage)
	case a.draining && a.revoked() != "":
		return "acl-admin has not granted " + a.revoked() + " back"
	}
	return ""
}

// revoked is the first revocable principal the admin last left without its grants.
func (a *aclAdmin) revoked() string {
	for _, p := range aclPrincipals[:len(aclPrincipals)-1] {
		if !a.granted[p] {
			return p
		}
	}
	return ""
}

const aclAdminTimeoutMs = 3000

func (a *aclAdmin) pump() {
	if a.backingOff() || a.busyReq {
		return
	}
	switch a.stage {
	case 0:
		a.createTopic()
	case 1:
		a.change(aclPrincipals, true, []acl.Operation{acl.OpDescribe, acl.OpWrite, acl.OpRead})
	case 2:
		if a.spec.QuotaBytes <= 0 {
			a.stage = 3
			a.wakeIn(0)
			return
		}
		a.setQuota()
	default:
		a.nextChange()
	}
}

// nextChange revokes or re-grants one revocable principal; draining, it re-grants
// every revoked one and stops.
func (a *aclAdmin) nextChange() {
	revocable := aclPrincipals[:len(aclPrincipals)-1]
	if a.draining {
		if a.want, a.wantOn = a.revoked(), true; a.want == "" {
			return
		}
	}
	if a.want == "" {
		a.want = revocable[a.rnd.Intn(len(revocable))]
		a.wantOn = !a.granted[a.want]
	}
	a.change([]string{a.want}, a.wantOn, []acl.Operation{acl.OpWrite, acl.OpRead})
}

// done ends a request: ok moves on after ~EveryMs, a failure retries after a backoff
// (and, on a cluster, after looking the controller up again).
func (a *aclAdmin) done(ok bool) {
	a.busyReq = false
	if !ok {
		if a.rt != nil {
			a.rt.ctl = -1
		}
		a.wakeIn(100 * ms)
		return
	}
	if a.draining { // the faults stopped: finish the setup and the re-grants at once
		a.wakeIn(a.rnd.Exp(ms, 10*ms))
		return
	}
	a.wakeIn(a.rnd.Exp(5*ms, a.spec.EveryMs*ms))
}

// findController asks for metadata when a clustered world's admin does not know the
// controller (CreateTopics goes there); it reports whether it asked.
func (a *aclAdmin) findController() bool {
	if a.rt == nil || a.rt.ctl >= 0 {
		return false
	}
	a.busyReq = true
	a.requestController(aclAdminTimeoutMs, func(err error) {
		a.done(err == nil)
	})
	return true
}

func (a *aclAdmin) createTopic() {
	if a.findController() {
		return
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = aclAdminTimeoutMs
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions = aclTopic, 1
	rt.ReplicationFactor = a.w.cfg.replicationFactor()
	req.Topics = append(req.Topics, rt)
	a.busyReq = true
	a.send(req, aclAdminTimeoutMs, func(r kmsg.Response, err error) {
		ok := err == nil
		if ok {
			for _, t := range r.(*kmsg.CreateTopicsResponse).Topics {
				a.code("create-topics", t.ErrorCode)
				ok = ok && (t.ErrorCode == 0 || t.ErrorCode == kerr.TopicAlreadyExists.Code)
			}
		}
		if ok {
			a.stage = 1
		}
		a.done(ok)
	})
}

// aclBinding is the binding the workload creates: principal p may do op on aclTopic.
func aclBinding(p string, op acl.Operation) acl.Binding {
	return acl.Binding{Type: acl.ResourceTopic, Name: aclTopic, Pattern: acl.PatternLiteral,
		Principal: p, Host: acl.Wildcard, Operation: op, Permission: acl.Allow}
}

// toController sends the next request to the controller's node on a cluster, as the
// workload did when another node answered ACL and quota changes REQUEST_TIMED_OUT;
// such a node now forwards them there (KIP-590; docs/simulation.md). It reports
// whether it had to look the controller up first.
func (a *aclAdmin) toController() bool {
	if a.findController() {
		return true
	}
	if a.rt != nil {
		a.rt.boot = a.rt.ctl // ACL and quota requests go to the bootstrap node
	}
	return false
}

// change grants (CreateAcls) or revokes (DeleteAcls) ops on aclTopic for principals.
func (a *aclAdmin) change(principals []string, grant bool, ops []acl.Operation) {
	if a.toController() {
		return
	}
	a.busyReq = true
	after := func(ok bool) {
		a.w.acls.changed(principals, grant, ok)
		if ok {
			for _, p := range principals {
				a.granted[p] = grant
			}
			a.want = ""
			if a.stage == 1 {
				a.stage = 2
			}
		}
		a.done(ok)
	}
	if grant {
		req := kmsg.NewPtrCreateACLsRequest()
		for _, p := range principals {
			for _, op := range ops {
				b := aclBinding(p, op)
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType, c.ResourceName = kmsg.ACLResourceType(b.Type), b.Name
				c.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern)
				c.Principal, c.Host = b.Principal, b.Host
				c.Operation = kmsg.ACLOperation(b.Operation)
				c.PermissionType = kmsg.ACLPermissionType(b.Permission)
				req.Creations = append(req.Creations, c)
			}
		}
		a.send(req, aclAdminTimeoutMs, func(r kmsg.Response, err error) {
			ok := err == nil
			if ok {
				for _, res := range r.(*kmsg.CreateACLsResponse).Results {
					a.code("create-acls", res.ErrorCode)
					ok = ok && res.ErrorCode == 0
				}
			}
			after(ok)
		})
		return
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, p := range principals {
		for _, op := range ops {
			b := aclBinding(p, op)
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName = kmsg.ACLResourceType(b.Type), kmsg.StringPtr(b.Name)
			f.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern)
			f.Principal, f.Host = kmsg.StringPtr(b.Principal), kmsg.StringPtr(b.Host)
			f.Operation = kmsg.ACLOperation(b.Operation)
			f.PermissionType = kmsg.ACLPermissionType(b.Permission)
			req.Filters = append(req.Filters, f)
		}
	}
	var c *conn
	a.send(req, aclAdminTimeoutMs, func(r kmsg.Response, err error) {
		ok := err == nil
		if ok {
			for _, res := range r.(*kmsg.DeleteACLsResponse).Results {
				a.code("delete-acls", res.ErrorCode)
				ok = ok && res.ErrorCode == 0
			}
		}
		if ok {
			a.w.acls.revokeAnswered(c, principals)
		}
		after(ok)
	})
	c = a.c
}

// setQuota sets producer_byte_rate for the last ACL client's client id.
func (a *aclAdmin) setQuota() {
	if a.toController() {
		return
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type = "client-id"
	ent.Name = kmsg.StringPtr(aclClientName(aclPrincipals[len(aclPrincipals)-1]))
	e.Entity = append(e.Entity, ent)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "producer_byte_rate", float64(a.spec.QuotaBytes)
	e.Ops = append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	a.busyReq = true
	a.send(req, aclAdminTimeoutMs, func(r kmsg.Response, err error) {
		ok := err == nil
		if ok {
			for _, e := range r.(*kmsg.AlterClientQuotasResponse).Entries {
				a.code("alter-client-quotas", e.ErrorCode)
				ok = ok && e.ErrorCode == 0
			}
		}
		if ok {
			a.stage = 3
			a.w.acls.quotaSetAt = a.w.now
			a.w.stats.ACLs["quota-set"]++
			if a.w.phase == phaseFinal {
				a.w.stats.ACLs["quota-set-in-final-read"]++
			}
			for _, c := range a.w.acls.list { // a draining client may have stopped
				c.wakeIn(0)
			}
		}
		a.done(ok)
	})
}

// aclQuotaClient says whether the client named name has the produce quota.
func (w *World) aclQuotaClient(name string) bool {
	return w.cfg.ACLs.QuotaBytes > 0 &&
		name == aclClientName(aclPrincipals[len(aclPrincipals)-1])
}
