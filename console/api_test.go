package console_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type partJSON struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	StartOffset *int64  `json:"startOffset"`
	EndOffset   *int64  `json:"endOffset"`
}

type previewJSON struct {
	Size      int    `json:"size"`
	UTF8      bool   `json:"utf8"`
	JSON      bool   `json:"json"`
	Text      string `json:"text"`
	Hex       string `json:"hex"`
	Truncated bool   `json:"truncated"`
}

type messagesJSON struct {
	From, Next, StartOffset, EndOffset int64
	Truncated                          bool
	Records                            []struct {
		Offset    int64        `json:"offset"`
		Timestamp int64        `json:"timestamp"`
		Key       *previewJSON `json:"key"`
		Value     *previewJSON `json:"value"`
		Headers   []struct {
			Key   string       `json:"key"`
			Value *previewJSON `json:"value"`
		} `json:"headers"`
	} `json:"records"`
}

// The JSON API shows what the broker holds: its broker, the topics with their
// partitions, leaders, ISR and offsets, records with their keys, values and headers,
// and the groups with their lag.
func TestConsoleAPIShowsTheNodesData(t *testing.T) {
	f := startFixture(t, false)

	var cluster struct {
		Controller int32 `json:"controller"`
		Brokers    []struct {
			ID       int32  `json:"id"`
			Host     string `json:"host"`
			State    string `json:"state"`
			ThisNode bool   `json:"thisNode"`
			Leaders  int    `json:"leaders"`
		} `json:"brokers"`
		Topics, Partitions int
		UnderReplicated    []any `json:"underReplicated"`
		QuorumLeader       *int64
	}
	f.getJSON(t, "/api/cluster", &cluster)
	require.Len(t, cluster.Brokers, 1)
	require.Equal(t, int32(1), cluster.Brokers[0].ID)
	require.True(t, cluster.Brokers[0].ThisNode)
	// Every partition, __consumer_offsets' included, is led by the one broker.
	require.Equal(t, 3, cluster.Topics) // orders, events, __consumer_offsets
	require.Equal(t, 4+8, cluster.Partitions)
	require.Equal(t, cluster.Partitions, cluster.Brokers[0].Leaders)
	require.Empty(t, cluster.UnderReplicated)
	require.NotNil(t, cluster.QuorumLeader)
	require.Equal(t, int64(1), *cluster.QuorumLeader)

	var topics struct {
		Topics []struct {
			Name       string `json:"name"`
			Partitions int    `json:"partitions"`
			Records    int64  `json:"records"`
		} `json:"topics"`
	}
	f.getJSON(t, "/api/topics", &topics)
	require.Len(t, topics.Topics, 3)
	require.Equal(t, "__consumer_offsets", topics.Topics[0].Name)
	require.Equal(t, "events", topics.Topics[1].Name)
	require.Equal(t, int64(5), topics.Topics[1].Records)
	require.Equal(t, "orders", topics.Topics[2].Name)
	require.Equal(t, 3, topics.Topics[2].Partitions)
	require.Equal(t, int64(30), topics.Topics[2].Records)

	var topic struct {
		Partitions []partJSON `json:"partitions"`
		Configs    []struct {
			Name string `json:"name"`
		} `json:"configs"`
	}
	f.getJSON(t, "/api/topics/orders", &topic)
	require.Len(t, topic.Partitions, 3)
	for i, p := range topic.Partitions {
		require.Equal(t, int32(i), p.Partition)
		require.Equal(t, int32(1), p.Leader)
		require.Equal(t, []int32{1}, p.Replicas)
		require.Equal(t, []int32{1}, p.ISR)
		require.Equal(t, int64(0), *p.StartOffset)
		require.Equal(t, int64(10), *p.EndOffset)
	}
	require.NotEmpty(t, topic.Configs)

	// A page of three records from offset 2: JSON values, and where to go on.
	var m messagesJSON
	f.getJSON(t, "/api/topics/orders/messages?partition=1&offset=2&limit=3", &m)
	require.Len(t, m.Records, 3)
	require.Equal(t, int64(2), m.Records[0].Offset)
	require.Equal(t, int64(5), m.Next)
	require.True(t, m.Truncated)
	require.Equal(t, "order-1-2", m.Records[0].Key.Text)
	require.True(t, m.Records[0].Value.JSON)
	require.Equal(t, `{"order":2,"partition":1,"amount":20}`, m.Records[0].Value.Text)
	// Newest records by default; a timestamp before the first record reads from 0.
	f.getJSON(t, "/api/topics/orders/messages?partition=0&limit=4", &m)
	require.Equal(t, []int64{6, 7, 8, 9}, offsetsOf(m))
	f.getJSON(t, fmt.Sprintf("/api/topics/orders/messages?partition=0&limit=2&timestamp=%d",
		f.t0.UnixMilli()), &m)
	require.Equal(t, []int64{0, 1}, offsetsOf(m))
	f.getJSON(t, fmt.Sprintf("/api/topics/orders/messages?partition=0&timestamp=%d",
		time.Now().Add(time.Hour).UnixMilli()), &m)
	require.Empty(t, m.Records)
	require.Equal(t, int64(10), m.From)
	// At the end: no records, not an error. A byte cap stops after the first record.
	f.getJSON(t, "/api/topics/orders/messages?partition=0&offset=10", &m)
	require.Empty(t, m.Records)
	f.getJSON(t, "/api/topics/orders/messages?partition=0&offset=0&maxBytes=1", &m)
	require.Len(t, m.Records, 1)
	require.True(t, m.Truncated)
	// Headers and a binary value, shown as hex.
	f.getJSON(t, "/api/topics/events/messages?partition=0&offset=3", &m)
	require.Len(t, m.Records, 2)
	require.Equal(t, "source", m.Records[0].Headers[0].Key)
	require.Equal(t, "test", m.Records[0].Headers[0].Value.Text)
	require.False(t, m.Records[1].Value.UTF8)
	require.Equal(t, "00ff1080", m.Records[1].Value.Hex)
	require.Nil(t, m.Records[1].Key)

	var groups struct {
		Groups []struct {
			Group    string `json:"group"`
			State    string `json:"state"`
			Members  int    `json:"members"`
			TotalLag *int64 `json:"totalLag"`
		} `json:"groups"`
	}
	f.getJSON(t, "/api/groups", &groups)
	require.Len(t, groups.Groups, 2)
	require.Equal(t, "audit", groups.Groups[0].Group)
	require.Equal(t, "Stable", groups.Groups[0].State)
	require.Equal(t, 1, groups.Groups[0].Members)
	require.Equal(t, int64(0), *groups.Groups[0].TotalLag)
	require.Equal(t, "billing", groups.Groups[1].Group)
	require.Equal(t, "Empty", groups.Groups[1].State)
	require.Equal(t, int64(billingLag), *groups.Groups[1].TotalLag)

	var group struct {
		State      string `json:"state"`
		TotalLag   int64  `json:"totalLag"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Committed int64 `json:"committed"`
			Lag       int64 `json:"lag"`
		} `json:"partitions"`
		Members []struct {
			ClientID string `json:"clientId"`
			Assigned []struct {
				Topic      string  `json:"topic"`
				Partitions []int32 `json:"partitions"`
			} `json:"assigned"`
		} `json:"members"`
	}
	f.getJSON(t, "/api/groups/billing", &group)
	require.Equal(t, int64(billingLag), group.TotalLag)
	require.Len(t, group.Partitions, 3)
	require.Equal(t, int64(6), group.Partitions[0].Lag)
	require.Equal(t, int64(10), group.Partitions[1].Committed)
	f.getJSON(t, "/api/groups/audit", &group)
	require.Len(t, group.Members, 1)
	require.Equal(t, "audit-consumer", group.Members[0].ClientID)
	require.Equal(t, "events", group.Members[0].Assigned[0].Topic)
	require.Equal(t, []int32{0}, group.Members[0].Assigned[0].Partitions)

	var stats struct {
		Produced  int64            `json:"produced"`
		Committed int64            `json:"committed"`
		Lag       map[string]int64 `json:"lag"`
	}
	f.getJSON(t, "/api/stats", &stats)
	require.Equal(t, int64(35), stats.Produced)
	require.Equal(t, int64(4+10+7+5), stats.Committed)
	require.Equal(t, map[string]int64{"billing": billingLag, "audit": 0}, stats.Lag)

	code, body := f.get(t, "/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "<title>Sluice console</title>")
	code, body = f.get(t, "/static/app.js")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "pageOverview")
}

func offsetsOf(m messagesJSON) []int64 {
	out := []int64{}
	for _, r := range m.Records {
		out = append(out, r.Offset)
	}
	return out
}

// Hostile and malformed requests get a clear 4xx, never a file outside the console, a
// 5xx or a read past the bounds, and the node keeps serving Kafka clients.
func TestConsoleAPIRejectsHostileInput(t *testing.T) {
	f := startFixture(t, false)
	msgs := "/api/topics/orders/messages?"
	long := strings.Repeat("9", 300)
	for _, c := range []struct {
		path string
		want int
	}{
		{"/api/topics/nope", 404},
		{"/api/topics/nope/messages?partition=0", 404},
		{"/api/topics/..%2F..%2Fetc%2Fpasswd", 400},
		{"/api/topics/..%2F..%2Fetc%2Fpasswd/messages?partition=0", 400},
		{"/api/topics/%2e%2e/messages?partition=0", 400},
		{"/api/topics/a%00b", 400},
		{"/api/topics/" + strings.Repeat("a", 250), 400},
		{"/static/..%2f..%2f..%2fetc%2fpasswd", 404},
		{"/static/%2e%2e/%2e%2e/etc/passwd", 404},
		{"/static/../../../../etc/passwd", 307},
		{"/etc/passwd", 404},
		{"/api/nope", 404},
		{"/api/groups/nope", 404},
		{"/api/groups/%01bad", 400},
		{msgs, 400},
		{msgs + "partition=", 400},
		{msgs + "partition=-1", 400},
		{msgs + "partition=3", 400},
		{msgs + "partition=abc", 400},
		{msgs + "partition=0x1", 400},
		{msgs + "partition=0&offset=-5", 400},
		{msgs + "partition=0&offset=99999999999999999999", 400},
		{msgs + "partition=0&offset=9223372036854775807", 416},
		{msgs + "partition=0&offset=11", 416},
		{msgs + "partition=0&offset=1&timestamp=1", 400},
		{msgs + "partition=0&timestamp=-1", 400},
		{msgs + "partition=0&limit=0", 400},
		{msgs + "partition=0&limit=101", 400},
		{msgs + "partition=0&maxBytes=2097152", 400},
		{msgs + "partition=0&offset=" + long, 400},
		{msgs + "partition=0&partition=1", 400},
		{msgs + "partition=0&%zz", 400},
	} {
		code, body := f.get(t, c.path)
		require.Equal(t, c.want, code, "%s: %s", c.path, body)
		require.NotContains(t, body, "root:", c.path)
		if strings.HasPrefix(c.path, "/api/") {
			require.Contains(t, body, `"error"`, c.path)
		}
	}
	// Admin actions are refused on a read-only console, whatever the body.
	for _, p := range []string{"/api/admin/topics", "/api/admin/topics/orders/configs",
		"/api/admin/groups/billing/offsets"} {
		code, body := f.post(t, p, `{"confirm":true,"name":"x"}`, nil)
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, body, "--console-admin")
	}
	// Headers over the listener's bound.
	req, err := http.NewRequest(http.MethodGet, f.base+"/api/topics", nil)
	require.NoError(t, err)
	req.Header.Set("X-Big", strings.Repeat("x", 64<<10))
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	// A request line of raw traversal, as a hand-made client sends it.
	nc, err := net.DialTimeout("tcp", f.n.HTTPAddr(), 2*time.Second)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = fmt.Fprintf(nc, "GET /static/../../../etc/passwd HTTP/1.1\r\nHost: x\r\n"+
		"Connection: close\r\n\r\n")
	require.NoError(t, err)
	raw := make([]byte, 4096)
	k, _ := nc.Read(raw)
	nc.Close()
	require.NotContains(t, string(raw[:k]), "root:")
	require.NotContains(t, string(raw[:k]), "200 OK")

	f.requireServesKafka(t)
	code, _ := f.get(t, "/healthz")
	require.Equal(t, http.StatusOK, code)
	_ = url.QueryEscape
}

// With --console-admin, the three actions work, each only with "confirm": true from
// the console's own origin.
func TestConsoleAdminActions(t *testing.T) {
	f := startFixture(t, true)
	p := "/api/admin/topics"
	code, _ := f.get(t, "/api/topics") // the console has read the topic list
	require.Equal(t, http.StatusOK, code)
	code, body := f.post(t, p, `{"name":"fresh","partitions":2}`, nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "confirm")
	code, body = f.post(t, p, `{"confirm":true,"name":"fresh"}`,
		map[string]string{"Content-Type": "text/plain"})
	require.Equal(t, http.StatusUnsupportedMediaType, code, body)
	code, body = f.post(t, p, `{"confirm":true,"name":"fresh"}`,
		map[string]string{"Origin": "http://evil.example"})
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = f.post(t, p, `{"confirm":true,"name":"fresh"}`,
		map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusForbidden, code, body)
	code, body = f.post(t, p, `{"confirm":true,"name":"../x"}`, nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = f.post(t, p, `{"confirm":true,"name":"x","bogus":1}`, nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	code, body = f.post(t, p, `{"confirm":true,"name":"`+strings.Repeat("a", 70<<10)+`"}`, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, code, body)
	code, body = f.post(t, p, `{"confirm":true,"name":"fresh","partitions":2}`,
		map[string]string{"Origin": f.base})
	require.Equal(t, http.StatusOK, code, body)
	td, err := f.adm.ListTopics(ctxFor(t, 5*time.Second), "fresh")
	require.NoError(t, err)
	require.Len(t, td["fresh"].Partitions, 2)
	// The page the console opens for a topic it just created shows it at once, though
	// the topic list was read (and could have been cached) a moment before.
	var fresh struct {
		Partitions []struct{} `json:"partitions"`
	}
	f.getJSON(t, "/api/topics/fresh", &fresh)
	require.Len(t, fresh.Partitions, 2)
	code, body = f.post(t, p, `{"confirm":true,"name":"fresh"}`, nil)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "TOPIC_ALREADY_EXISTS")

	code, body = f.post(t, "/api/admin/topics/orders/configs",
		`{"confirm":true,"set":{"retention.ms":"3600000"}}`, nil)
	require.Equal(t, http.StatusOK, code, body)
	rc, err := f.adm.DescribeTopicConfigs(ctxFor(t, 5*time.Second), "orders")
	require.NoError(t, err)
	cfg, err := rc.On("orders", nil)
	require.NoError(t, err)
	found := false
	for _, c := range cfg.Configs {
		if c.Key == "retention.ms" {
			found = true
			require.Equal(t, "3600000", c.MaybeValue())
		}
	}
	require.True(t, found)
	code, body = f.post(t, "/api/admin/topics/nope/configs",
		`{"confirm":true,"set":{"retention.ms":"1"}}`, nil)
	require.Equal(t, http.StatusNotFound, code, body)

	g := "/api/admin/groups/billing/offsets"
	code, body = f.post(t, g, `{"confirm":true,"topic":"orders","to":"offset","offset":99}`,
		nil)
	require.Equal(t, http.StatusRequestedRangeNotSatisfiable, code, body)
	code, body = f.post(t, g, `{"confirm":true,"topic":"orders","to":"earliest"}`, nil)
	require.Equal(t, http.StatusOK, code, body)
	var group struct {
		TotalLag int64 `json:"totalLag"`
	}
	f.getJSON(t, "/api/groups/billing", &group)
	require.Equal(t, int64(30), group.TotalLag)
	code, body = f.post(t, g, `{"confirm":true,"topic":"orders","partition":1,"to":"offset",`+
		`"offset":3}`, nil)
	require.Equal(t, http.StatusOK, code, body)
	f.getJSON(t, "/api/groups/billing", &group)
	require.Equal(t, int64(27), group.TotalLag)
	// A group with members keeps its offsets.
	code, body = f.post(t, "/api/admin/groups/audit/offsets",
		`{"confirm":true,"topic":"events","to":"earliest"}`, nil)
	require.Equal(t, http.StatusConflict, code, body)
	f.requireServesKafka(t)
}
