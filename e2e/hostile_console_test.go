package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Hostile requests to the web console on the HTTP listener (docs/console.md,
// docs/limits.md "Console"), against the real binary: each gets a clear 4xx (or a 503
// when too many arrive at once), and Kafka clients keep being served.

// startConsoleNode starts a node whose HTTP listener is on, with topic "c" holding a
// record; it returns the node and the console's base URL.
func startConsoleNode(t *testing.T) (*node, string) {
	t.Helper()
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n := startNode(t, "", "--http-listen", httpAddr)
	base := "http://" + httpAddr
	n.requireServes("c", 10*time.Second)
	return n, base
}

var consoleClient = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func consoleGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := consoleClient.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Traversal, bad offsets, unknown topics, oversized parameters and headers.
func TestHostileConsoleBadRequests(t *testing.T) {
	n, base := startConsoleNode(t)
	for _, c := range []struct {
		path string
		want int
	}{
		{"/static/..%2f..%2f..%2fetc%2fpasswd", 404},
		{"/api/topics/..%2F..%2Fetc%2Fpasswd/messages?partition=0", 400},
		{"/api/topics/nope/messages?partition=0", 404},
		{"/api/topics/c/messages?partition=0&offset=-1", 400},
		{"/api/topics/c/messages?partition=0&offset=9223372036854775807", 416},
		{"/api/topics/c/messages?partition=0&offset=1e9", 400},
		{"/api/topics/c/messages?partition=99", 400},
		{"/api/topics/c/messages?partition=0&limit=1000000", 400},
		{"/api/topics/c/messages?partition=0&offset=" + strings.Repeat("1", 5000), 400},
	} {
		code, body := consoleGet(t, base+c.path)
		require.Equal(t, c.want, code, "%s: %s", c.path, body)
		if strings.HasPrefix(c.path, "/api/") {
			require.Contains(t, body, `"error"`, c.path)
		}
		require.NotContains(t, body, "root:", c.path)
	}
	req, err := http.NewRequest(http.MethodGet, base+"/api/cluster", nil)
	require.NoError(t, err)
	req.Header.Set("X-Huge", strings.Repeat("h", 1<<20))
	resp, err := consoleClient.Do(req)
	if err == nil { // the server may also close the connection while the header is sent
		resp.Body.Close()
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	}
	code, _ := consoleGet(t, base+"/api/cluster")
	require.Equal(t, http.StatusOK, code)
	n.requireServes("after-console-bad-requests", 2*time.Second)
	n.requireWithin(200<<20, 200)
}

// Many slow clients (headers sent a byte at a time) and a burst of the largest message
// reads: the console still answers, and Kafka clients are still served.
func TestHostileConsoleFloods(t *testing.T) {
	n, base := startConsoleNode(t)
	addr := strings.TrimPrefix(base, "http://")
	var conns []net.Conn
	for i := 0; i < 50; i++ {
		nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
		require.NoError(t, err)
		_, err = nc.Write([]byte("GET /api/cluster HTTP/1.1\r\nHost: x\r\nX-Slow: "))
		require.NoError(t, err)
		conns = append(conns, nc)
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	code, body := consoleGet(t, base+"/api/cluster")
	require.Equal(t, http.StatusOK, code, body)

	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := consoleClient.Get(base +
				"/api/topics/c/messages?partition=0&offset=0&limit=100&maxBytes=1048576")
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("burst of message reads answered: %v", codes)
	for c := range codes {
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, c)
	}
	require.Positive(t, codes[http.StatusOK])
	n.requireServes("after-console-floods", 2*time.Second)
	n.requireWithin(200<<20, 200)
}
