package console

import (
	"context"
	"net/http"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

type brokerJSON struct {
	ID         int32   `json:"id"`
	Host       string  `json:"host"`
	Port       int32   `json:"port"`
	Rack       *string `json:"rack"`
	State      string  `json:"state"`
	Controller bool    `json:"controller"`
	ThisNode   bool    `json:"thisNode"`
	Leaders    int     `json:"leaders"`  // partitions it leads
	Replicas   int     `json:"replicas"` // partition replicas it holds
}

type clusterJSON struct {
	ClusterID        string       `json:"clusterId"`
	Controller       int32        `json:"controller"`
	NodeID           int32        `json:"nodeId"`
	Brokers          []brokerJSON `json:"brokers"`
	QuorumLeader     *int64       `json:"quorumLeader"`
	Quorum           []namedValue `json:"quorum"`
	Topics           int          `json:"topics"`
	Partitions       int          `json:"partitions"`
	UnderReplicated  []tpJSON     `json:"underReplicated"`
	Offline          []tpJSON     `json:"offline"`
	ConnectionsOpen  *int64       `json:"connectionsOpen"`
	TruncatedPartial bool         `json:"truncated"`
}

type tpJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// metadata reads the cluster's metadata for every topic (the client's cached copy, at
// most a fraction of a second old). Asking for all topics, never a named one, means a
// console request cannot create a topic on a broker that creates topics on Metadata.
// metadata asks the node for the cluster's metadata now. kadm.Metadata alone answers
// from the client's cache, up to kgo's MetadataMinAge (5 s) old: a topic just created
// through the console then showed as "unknown topic" on the page the console opened
// for it. kadm's documented way to bypass the cache is to ask for authorized
// operations as well, which the node answers from the same request.
func (c *Console) metadata(ctx context.Context) (kadm.Metadata, error) {
	return c.adm.Metadata(kadm.WithAuthorizedOps(ctx))
}

func (c *Console) cluster(ctx context.Context, _ *http.Request) (any, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	out := clusterJSON{ClusterID: md.Cluster, Controller: md.Controller, NodeID: c.opts.NodeID,
		Topics: len(md.Topics), Brokers: []brokerJSON{}, UnderReplicated: []tpJSON{},
		Offline: []tpJSON{}}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, td := range md.Topics.Sorted() {
		for _, pd := range td.Partitions.Sorted() {
			out.Partitions++
			leaders[pd.Leader]++
			for _, r := range pd.Replicas {
				replicas[r]++
			}
			tp := tpJSON{Topic: td.Topic, Partition: pd.Partition}
			if pd.Leader < 0 {
				out.Offline = capAppend(out.Offline, tp, &out.TruncatedPartial)
			} else if len(pd.ISR) < len(pd.Replicas) {
				out.UnderReplicated = capAppend(out.UnderReplicated, tp, &out.TruncatedPartial)
			}
		}
	}
	for _, b := range md.Brokers {
		out.Brokers = append(out.Brokers, brokerJSON{ID: b.NodeID, Host: b.Host, Port: b.Port,
			Rack: b.Rack, State: "registered", Controller: b.NodeID == md.Controller,
			ThisNode: b.NodeID == c.opts.NodeID, Leaders: leaders[b.NodeID],
			Replicas: replicas[b.NodeID]})
	}
	sort.Slice(out.Brokers, func(i, j int) bool { return out.Brokers[i].ID < out.Brokers[j].ID })
	nm := c.gather()
	if v, ok := nm.gauge("sluice_quorum_leader"); ok {
		l := int64(v)
		out.QuorumLeader = &l
	}
	out.Quorum = nm.quorum()
	if out.Quorum == nil {
		out.Quorum = []namedValue{}
	}
	if v, ok := nm.gauge("sluice_connections_open"); ok {
		n := int64(v)
		out.ConnectionsOpen = &n
	}
	return out, nil
}

// capAppend appends unless the list holds MaxPartitions already.
func capAppend(l []tpJSON, tp tpJSON, truncated *bool) []tpJSON {
	if len(l) >= MaxPartitions {
		*truncated = true
		return l
	}
	return append(l, tp)
}
