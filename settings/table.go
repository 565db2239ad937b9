package settings

import "math"

const (
	i32 = math.MaxInt32
	i64 = math.MaxInt64
)

func intS(sc Scope, name string, def string, lo, hi int64, doc string) Setting {
	return Setting{Name: name, Scope: sc, Kind: Int, Default: def, Min: lo, Max: hi, Doc: doc}
}

func boolS(sc Scope, name string, def string, doc string) Setting {
	return Setting{Name: name, Scope: sc, Kind: Bool, Default: def, Doc: doc}
}

func strS(sc Scope, name string, def string, doc string) Setting {
	return Setting{Name: name, Scope: sc, Kind: String, Default: def, Doc: doc}
}

func topicS(name, alias string, kind Kind, def string, lo, hi int64, choices []string,
	doc string) Setting {
	return Setting{Name: name, Alias: alias, Scope: Topic, Kind: kind, Default: def, Min: lo,
		Max: hi, Choices: choices, Doc: doc}
}

// table is every setting. Defaults are Kafka's where Kafka has the setting; the tests in
// this package hold each to what its owner does.
var table = []Setting{
	// The node command (cmd/sluice).
	// Listeners and TLS (cmd/sluice node, net.TLSSettings).
	strS(Security, "listeners", "PLAINTEXT://127.0.0.1:9092",
		"NAME://host:port,... listeners for Kafka clients (--listeners; --listen is one "+
			"PLAINTEXT listener)"),
	strS(Security, "advertised.listeners", "",
		"NAME://host:port,... addresses clients are told, per listener (--advertised-"+
			"listeners; default: the address listened on)"),
	strS(Security, "listener.security.protocol.map",
		"PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		"each listener name's protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
	strS(Security, "inter.broker.listener.name", "",
		"the listener peers use; its advertised address is the one registered "+
			"(default: the first listener)"),
	strS(Security, "controller.listener.names", "",
		"the listener whose ssl.* settings the metadata quorum's transport "+
			"(--controller-listen) uses: protocol SSL is mutual TLS, PLAINTEXT or \"\" plaintext"),
	{Name: "ssl.keystore.type", Scope: Security, Kind: Enum, Default: "PEM",
		Choices: []string{"PEM"}, Doc: "PEM only (Kafka's JKS and PKCS12 are not read)"},
	strS(Security, "ssl.keystore.location", "",
		"PEM file with the certificate chain and its unencrypted private key; re-read "+
			"when it changes"),
	strS(Security, "ssl.keystore.certificate.chain", "",
		"the certificate chain as inline PEM (with ssl.keystore.key)"),
	strS(Security, "ssl.keystore.key", "", "the private key as inline unencrypted PEM"),
	strS(Security, "ssl.key.password", "", "refused when set: encrypted keys are not read"),
	strS(Security, "ssl.keystore.password", "", "refused when set: no password stores"),
	{Name: "ssl.truststore.type", Scope: Security, Kind: Enum, Default: "PEM",
		Choices: []string{"PEM"}, Doc: "PEM only"},
	strS(Security, "ssl.truststore.location", "",
		"PEM CA bundle that signs client certificates (and peers' certificates)"),
	strS(Security, "ssl.truststore.certificates", "", "the CA bundle as inline PEM"),
	strS(Security, "ssl.truststore.password", "", "refused when set: no password stores"),
	{Name: "ssl.client.auth", Scope: Security, Kind: Enum, Default: "none",
		Choices: []string{"none", "requested", "required"},
		Doc: "client certificates: none, verified when given, or required; the " +
			"principal is User:<subject>"},
	strS(Security, "ssl.enabled.protocols", "TLSv1.2,TLSv1.3",
		"TLS versions served: TLSv1.2 and/or TLSv1.3"),
	strS(Security, "ssl.endpoint.identification.algorithm", "https",
		"peers' host names are checked against their certificates (empty: not)"),
	{Name: "ssl.principal.mapping.rules", Scope: Security, Kind: Enum, Default: "DEFAULT",
		Choices: []string{"DEFAULT"}, Doc: "the principal is the certificate's full subject"},
	intS(Security, "sluice.ssl.keystore.reload.check.ms", "10000", 0, i64,
		"how often a handshake checks ssl.keystore.location for a new file (0: never)"),
	// SASL (net.SASLSettings).
	strS(Security, "sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512",
		"mechanisms of the SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "+
			"OAUTHBEARER (also per listener, listener.name.<name>.sasl.enabled.mechanisms)"),
	{Name: "sasl.mechanism.inter.broker.protocol", Scope: Security, Kind: Enum,
		Default: "PLAIN", Choices: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"},
		Doc: "how a node authenticates to its peers' SASL inter-broker listener"},
	strS(Security, "sluice.sasl.plain.users.file", "",
		"PLAIN's users, user:password per line, chmod 600 (development; read at start)"),
	strS(Security, "sluice.sasl.inter.broker.user", "",
		"the user a node authenticates as on a SASL inter-broker listener"),
	strS(Security, "sluice.sasl.inter.broker.password", "", "that user's password"),
	strS(Security, "sasl.oauthbearer.jwks.endpoint.url", "",
		"OAUTHBEARER: file:// URL of the JWKS that signs the tokens (http(s) refused); "+
			"re-read when it changes"),
	intS(Security, "sasl.oauthbearer.jwks.endpoint.refresh.ms", "3600000", 0,
		31_536_000_000, "how often the JWKS file is checked for a change (an unknown "+
			"kid checks it at once, at most once a second; 0: only then)"),
	strS(Security, "sasl.oauthbearer.expected.audience", "",
		"comma-separated audiences; a token's aud must hold one (empty: not checked)"),
	strS(Security, "sasl.oauthbearer.expected.issuer", "",
		"a token's iss must be this (empty: not checked)"),
	strS(Security, "sasl.oauthbearer.sub.claim.name", "sub",
		"the claim whose value is the principal, User:<value>"),
	strS(Security, "sasl.oauthbearer.scope.claim.name", "scope",
		"the claim holding the token's scope (a string or a list of strings)"),
	intS(Security, "sasl.oauthbearer.clock.skew.seconds", "30", 0, i32,
		"leeway on exp, nbf and iat"),
	{Name: "log.dirs", Alias: "log.dir", Scope: Node, Kind: String, Default: "./data",
		Doc: "the one data directory: partition logs and node state (--data)"},
	intS(Node, "sluice.log.max.open.files", "", 1, i32,
		"partition log files held open at once (default: derived from the open-file limit)"),
	strS(Node, "broker.rack", "", "the node's rack (--rack): replicas spread across racks"),
	intS(Node, "sluice.request.slow.log.ms", "1000", 0, i64,
		"log requests answered later than this, with their stages (0: off)"),

	// The wire server (net.Options).
	intS(Connections, "socket.request.max.bytes", "104857600", 1, i32,
		"largest request frame; a bigger one closes the connection"),
	intS(Connections, "max.connections", "10000", 1, i32,
		"connections open at once (lowered at start to fit the open-file limit)"),
	intS(Connections, "max.connections.per.ip", "1000", 1, i32,
		"connections open at once from one address"),
	strS(Connections, "max.connections.per.ip.overrides", "",
		"per-address caps, ip:n,ip:n"),
	intS(Connections, "connections.max.idle.ms", "600000", 1, 31_536_000_000,
		"an idle connection is closed after this long"),
	intS(Connections, "sluice.request.read.timeout.ms", "30000", 1, 31_536_000_000,
		"a request frame must arrive whole within this long (slow-loris bound)"),
	intS(Connections, "sluice.connection.write.timeout.ms", "30000", 1, 31_536_000_000,
		"a client that does not read its responses for this long is disconnected"),
	intS(Connections, "queued.max.request.bytes", "268435456", -1, i64,
		"request bytes read and not yet answered, node-wide (-1: unbounded; not 0)"),
	intS(Connections, "sluice.queued.max.response.bytes", "536870912", -1, i64,
		"response bytes waiting to be written, node-wide (-1: unbounded; not 0)"),
	intS(Connections, "sluice.connection.max.inflight.requests", "1000", 1, i32,
		"requests read and not yet answered on one connection"),
	intS(Connections, "sluice.connection.max.inflight.bytes", "67108864", 1, i32,
		"request bytes read and not yet answered on one connection"),
	intS(Connections, "sluice.connection.max.queued.response.bytes", "67108864", 1, i32,
		"response bytes waiting to be written on one connection"),
	intS(Connections, "sasl.server.max.receive.size", "524288", 1, i32,
		"largest frame a SASL connection may send before it is authenticated"),
	intS(Connections, "sluice.sasl.authentication.timeout.ms", "10000", 1, 31_536_000_000,
		"a SASL connection must authenticate (or re-authenticate) within this long"),
	intS(Connections, "connection.failed.authentication.delay.ms", "100", 0, 31_536_000_000,
		"delay before answering a failed authentication and closing (0: none)"),
	intS(Connections, "connections.max.reauth.ms", "0", 0, 31_536_000_000,
		"SASL session lifetime: clients re-authenticate before it ends (0: no expiry)"),

	// The broker actor (broker.Config).
	{Name: "node.id", Alias: "broker.id", Scope: Broker, Kind: Int, Default: "1", Min: 0,
		Max: i32, Doc: "the node's id in the cluster (--id)"},
	strS(Broker, "cluster.id", "sluice-dev-cluster",
		"the cluster's id; a node of another cluster is refused"),
	boolS(Broker, "auto.create.topics.enable", "true",
		"Metadata and Produce for an unknown topic create it"),
	intS(Broker, "num.partitions", "3", 1, i32, "partitions of an auto-created topic"),
	intS(Broker, "default.replication.factor", "1", 1, math.MaxInt16,
		"replicas of an auto-created topic"),
	intS(Broker, "log.retention.check.interval.ms", "300000", 1, i64,
		"how often retention looks for segments to delete"),
	intS(Broker, "sluice.max.partitions", "0", 0, i32,
		"partitions the node hosts at most; creates past it are refused (0: derived)"),
	intS(Broker, "sluice.producer.snapshot.interval.batches", "20000", 1, i32,
		"durable batches of a partition between snapshots of its producer table"),
	intS(Broker, "offsets.topic.num.partitions", "8", 1, i32,
		"partitions of __consumer_offsets, fixed when it is created"),
	intS(Broker, "offsets.topic.replication.factor", "3", 1, math.MaxInt16,
		"replicas of __consumer_offsets with a metadata quorum, capped to the live "+
			"brokers (a node without a quorum: 1)"),
	intS(Broker, "offsets.topic.segment.bytes", "104857600", 14, i32,
		"segment.bytes of __consumer_offsets (compacted), set when it is created: "+
			"the cleaner compacts only closed segments"),
	intS(Broker, "offset.metadata.max.bytes", "4096", 0, i32,
		"largest metadata string of a committed offset"),
	intS(Broker, "group.min.session.timeout.ms", "6000", 0, i32,
		"shortest session a group member may ask for"),
	intS(Broker, "group.max.session.timeout.ms", "1800000", 0, i32,
		"longest session a group member may ask for"),
	intS(Broker, "group.initial.rebalance.delay.ms", "3000", 0, i32,
		"wait for more members before a new group's first rebalance"),
	intS(Broker, "group.max.size", "10000", 1, i32, "members one group may have"),
	intS(Broker, "offsets.retention.minutes", "10080", 1, i32,
		"committed offsets of an empty group are kept this long"),
	intS(Broker, "offsets.retention.check.interval.ms", "600000", 1, i32,
		"how often expired offsets are looked for"),
	intS(Broker, "fetch.max.bytes", "57671680", 1024, i32,
		"record bytes in one consumer Fetch response at most"),
	intS(Broker, "replica.fetch.response.max.bytes", "10485760", 0, i32,
		"record bytes in one follower Fetch response at most"),
	intS(Broker, "replica.lag.time.max.ms", "30000", 1, i64,
		"an ISR member not caught up with its leader for this long leaves the ISR"),
	intS(Broker, "sluice.auto.create.topics.max.per.request", "20", 0, i32,
		"topics one Metadata request may auto-create (0: none)"),
	intS(Broker, "sluice.auto.create.partitions.per.sec", "50", 0, i32,
		"rate of partitions auto-creation may create (0: none)"),
	intS(Broker, "sluice.controller.mutation.rate", "0", 0, i32,
		"partitions CreateTopics may create per second (0: unlimited)"),
	intS(Broker, "sluice.open.logs.per.step", "64", 1, i32,
		"new partition logs opened per step of the event loop"),
	intS(Broker, "max.incremental.fetch.session.cache.slots", "1000", 0, i32,
		"incremental fetch sessions (KIP-227) kept at once (0: none)"),
	intS(Broker, "sluice.fetch.session.cache.max.partitions", "100000", 0, i32,
		"partitions all fetch sessions hold together"),
	intS(Broker, "quota.window.num", "11", 1, i32,
		"samples a client quota's rate is measured over (docs/limits.md, Client quotas)"),
	intS(Broker, "quota.window.size.seconds", "1", 1, i32,
		"length of each sample of a client quota's rate"),
	// The authorizer (broker.AuthzConfig, docs/security.md "ACLs").
	strS(Broker, "authorizer.class.name", "",
		"empty: no authorizer, every request allowed; org.apache.kafka.metadata.authorizer."+
			"StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer, or sluice): "+
			"requests are checked against the ACLs"),
	strS(Broker, "super.users", "",
		"principals allowed everything, separated by ; (User:admin;User:CN=ops)"),
	boolS(Broker, "allow.everyone.if.no.acl.found", "false",
		"with an authorizer: a resource no ACL covers is allowed to every principal"),

	// The follower fetcher (broker.FetcherConfig).
	intS(Broker, "replica.fetch.wait.max.ms", "500", 0, i32,
		"how long a leader may hold a follower's Fetch with nothing new"),
	intS(Broker, "replica.fetch.min.bytes", "1", 1, i32,
		"bytes a leader waits for before it answers a follower's Fetch early"),
	intS(Broker, "replica.fetch.max.bytes", "1048576", 0, i32,
		"record bytes a follower asks for per partition (the first batch comes whole)"),
	intS(Broker, "replica.fetch.backoff.ms", "1000", 0, i32,
		"a follower's wait before asking again for a partition that failed"),
	intS(Broker, "replica.socket.timeout.ms", "30000", 1, i32,
		"a follower's request to its leader fails when unanswered this long"),
	boolS(Broker, "log.cleaner.enable", "true", "run the log cleaner for compacted topics"),
	intS(Broker, "log.cleaner.threads", "1", 1, 1, "cleaner workers (one)"),
	intS(Broker, "log.cleaner.dedupe.buffer.size", "33554432", 1024, i64,
		"bytes of the cleaner's key map (Kafka: 128 MiB)"),
	{Name: "log.cleaner.io.max.bytes.per.second", Scope: Broker, Kind: Float,
		Default: "1.7976931348623157E308", Min: 1,
		Doc: "bytes the cleaner reads plus writes per second"},
	intS(Broker, "log.cleaner.backoff.ms", "15000", 1, i64,
		"how often the cleaner looks for partitions to clean"),

	// Topic configs; the alias is the broker-wide default's name.
	topicS("cleanup.policy", "log.cleanup.policy", Enum, "delete", 0, 0,
		[]string{"delete", "compact", "compact,delete", "delete,compact"},
		"delete: retention removes old segments; compact: the cleaner keeps the last "+
			"record per key; both: both"),
	topicS("delete.retention.ms", "log.cleaner.delete.retention.ms", Int, "86400000", 0, i64,
		nil, "how long the cleaner keeps a tombstone (compacted topics)"),
	topicS("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", Int,
		"9223372036854775807", 1, i64, nil,
		"a dirty segment older than this is cleaned whatever the dirty ratio"),
	topicS("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", Float, "0.5", 0, 1,
		nil, "dirty share of the cleanable bytes that starts a clean"),
	topicS("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", Int, "0", 0, i64, nil,
		"a record stays uncompacted at least this long"),
	topicS("index.interval.bytes", "log.index.interval.bytes", Int, "4096", 0, i32, nil,
		"bytes between sparse index entries"),
	topicS("log.flush.policy", "", Enum, "always", 0, 0, []string{"always", "never"},
		"always: fsync before acks=all is answered and data is read; never: trust the "+
			"page cache (a machine crash may lose acknowledged writes)"),
	topicS("max.message.bytes", "message.max.bytes", Int, "1048588", 0, 1<<30, nil,
		"largest batch accepted"),
	topicS("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", Int,
		"3600000", 0, i64, nil, "how far ahead of the broker's clock a CreateTime "+
			"timestamp may be"),
	topicS("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", Int,
		"9223372036854775807", 0, i64, nil, "how far behind the broker's clock a "+
			"CreateTime timestamp may be"),
	topicS("message.timestamp.type", "log.message.timestamp.type", Enum, "CreateTime", 0, 0,
		[]string{"CreateTime", "LogAppendTime"}, "which timestamp batches carry"),
	topicS("min.insync.replicas", "", Int, "1", 1, 1<<15, nil,
		"replicas that must hold a write before acks=all is answered"),
	topicS("retention.bytes", "log.retention.bytes", Int, "-1", -1, 1<<62, nil,
		"per-partition size bound (-1: none)"),
	topicS("retention.ms", "log.retention.ms", Int, "604800000", -1, 1<<62, nil,
		"age bound of whole segments (-1: none)"),
	topicS("segment.bytes", "log.segment.bytes", Int, "1073741824", 14, i32, nil,
		"segment roll size"),
	topicS("segment.ms", "log.roll.ms", Int, "604800000", 1, 1<<62, nil, "segment roll age"),

	// The controller and the broker lifecycle (controller.Config).
	intS(Controller, "broker.session.timeout.ms", "9000", 1, i64,
		"a broker not heard from this long is fenced"),
	intS(Controller, "broker.heartbeat.interval.ms", "2000", 1, i64,
		"how often a broker heartbeats; below the session timeout"),
	boolS(Controller, "unclean.leader.election.enable", "false",
		"elect a replica outside the ISR when none in it is alive (may lose acknowledged "+
			"records)"),
	boolS(Controller, "auto.leader.rebalance.enable", "true",
		"move leadership back to preferred replicas periodically"),
	intS(Controller, "leader.imbalance.check.interval.seconds", "300", 1, i64,
		"how often leadership is rebalanced"),
	intS(Controller, "sluice.controller.max.inflight.records", "256", 1, i32,
		"controller proposals in flight at once"),
	intS(Controller, "sluice.broker.connection.loss.grace.ms", "1000", 0, i64,
		"once the connection carrying a broker's heartbeats closes (its process died), "+
			"fence it unless it heartbeats again within this long (0: only the session "+
			"timeout fences)"),
}
