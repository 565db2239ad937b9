// Package console is the node's web console (issue 9): a few embedded pages of plain
// HTML, CSS and JavaScript (web/, no build step, no third-party script) and the JSON API
// they read, served on the node's HTTP listener under "/".
//
// The console holds no state of its own. Every answer is read, at the time of the
// request, through a Kafka client (franz-go kadm/kgo) connected to the node's own Kafka
// listener, so it shows what any Kafka client would see and works the same on any node of
// a cluster; node-local facts that Kafka's protocol does not carry (partition sizes on
// disk, the metadata quorum's state, latency histograms) are read from the node's
// Prometheus registry. The live charts keep their history in the browser, which polls
// /api/stats.
//
// Every endpoint is bounded: one deadline per request for the Kafka calls, caps on the
// topics, partitions, groups and records an answer holds, a cap on the bytes a message
// read returns, and a cap on concurrent API requests. Every parameter is validated before
// it reaches the client: a malformed value is 400, an unknown topic or group 404, an
// offset outside the partition's log 416, a disabled admin action 403.
//
// Read-only by default. With Options.Admin (`sluice node --console-admin`) the console
// can create a topic, alter a topic's configs and reset a group's offsets; each POST
// must carry "confirm": true (the page asks first), a JSON content type and no foreign
// Origin, so another site cannot drive it from a browser.
//
// docs/console.md describes the pages and the API.
package console
