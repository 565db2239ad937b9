package broker

// The follower fetcher's settings (fetcher.go), with Kafka's names and defaults.
// docs/limits.md (Replication) says what each bounds and what happens when it is hit.

// FetcherConfig holds the settings of the follower side of replication.
type FetcherConfig struct {
	// WaitMaxMs is replica.fetch.wait.max.ms: how long the leader may hold a follower's
	// Fetch when it has nothing new (the Fetch's MaxWaitMillis).
	WaitMaxMs int
	// MinBytes is replica.fetch.min.bytes: the bytes the leader waits for before it
	// answers early (the Fetch's MinBytes).
	MinBytes int
	// MaxBytes is replica.fetch.max.bytes: the most record bytes asked for one partition
	// (PartitionMaxBytes); the first batch comes whole even when bigger. The bound on the
	// whole response is Limits.ReplicaFetchResponseMaxBytes.
	MaxBytes int
	// BackoffMs is replica.fetch.backoff.ms: how long a partition waits before it is
	// asked for again after an error (leadership moved, storage error, garbage records,
	// the leader unreachable).
	BackoffMs int
	// SocketTimeoutMs is replica.socket.timeout.ms: a follower's request not answered
	// this long fails (PeerRequest.TimeoutMs; never below WaitMaxMs).
	SocketTimeoutMs int
}

// DefaultFetcherConfig returns Kafka's defaults.
func DefaultFetcherConfig() FetcherConfig {
	return FetcherConfig{WaitMaxMs: 500, MinBytes: 1, MaxBytes: 1 << 20, BackoffMs: 1000,
		SocketTimeoutMs: 30_000}
}

// fetcherSettings lists every setting FetcherConfig.set accepts, with its lower bound.
var fetcherSettings = []intSetting[FetcherConfig]{
	{"replica.fetch.wait.max.ms", 0, func(c *FetcherConfig) *int { return &c.WaitMaxMs }},
	{"replica.fetch.min.bytes", 1, func(c *FetcherConfig) *int { return &c.MinBytes }},
	{"replica.fetch.max.bytes", 0, func(c *FetcherConfig) *int { return &c.MaxBytes }},
	{"replica.fetch.backoff.ms", 0, func(c *FetcherConfig) *int { return &c.BackoffMs }},
	{"replica.socket.timeout.ms", 1, func(c *FetcherConfig) *int { return &c.SocketTimeoutMs }},
}

// set applies one setting; ok is false when name is not a fetcher setting.
func (c *FetcherConfig) set(name, value string) (ok bool, err error) {
	return setIntSetting(fetcherSettings, c, name, value)
}

func fetcherSettingNames() []string { return intSettingNames(fetcherSettings) }

// timeoutMs is the PeerRequest timeout of a follower's request: a Fetch may be held
// WaitMaxMs by the leader, so it is never shorter than that.
func (c FetcherConfig) timeoutMs() int64 { return int64(max(c.SocketTimeoutMs, c.WaitMaxMs)) }
