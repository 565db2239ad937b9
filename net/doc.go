// Package net is Sluice's Kafka wire server: it owns the TCP sockets, frames and decodes
// requests with franz-go's kmsg codec, hands them to the node as broker.Request inputs,
// and writes the node's broker.Reply answers back in request order.
//
// # Threads
//
// One accept goroutine per Server, and per connection one reader goroutine and one
// writer goroutine. No goroutine is started per request. The reader reads a frame,
// decodes it and delivers it to the Sink (the node's event loop), blocking there when
// the node is busy: that blocking, and the per-connection in-flight bound, are the
// backpressure that keeps a fast client from flooding the node. Sink.Request is told
// whether the request is the connection's only one in flight, so the node may step it
// on the reader's goroutine. The writer encodes finished responses and writes every
// response that is ready in one syscall. A Replier lets the goroutine that steps the
// node write answers itself instead, with one non-blocking write (never a Fetch answer,
// never while the writer is writing); what the socket does not take goes to the writer.
//
// # Ordering
//
// Kafka clients match responses to requests by arrival order (the correlation id is only
// a check), so responses on a connection must leave in request order even when the
// broker answers a long-polling Fetch after a later Produce. Each connection keeps a
// FIFO of in-flight requests; Reply fills a slot, and the writer (or a Replier, one of
// them at a time) only ever writes the done slots at the head of the FIFO. This is rule E1 of core/broker/env.go.
//
// # What the server answers itself
//
// ApiVersions is answered here from broker.SupportedVersions (its response header is
// always v0). Produce v0–v2 (which predate record batches) is answered with
// UNSUPPORTED_VERSION per partition without closing the connection. On a SASL listener,
// SaslHandshake and SaslAuthenticate are served here and nothing else reaches the node
// before the client has authenticated (sasl.go; PLAIN against a users file, SCRAM
// against the replicated credentials a ScramStore holds). Every other request goes to
// the node. A frame with a bad size, a truncated or malformed body, an unknown
// API key or a version outside the advertised range closes that one connection with a
// log line; nothing a client sends can panic the process.
//
// # Limits
//
// Options bound what one client can make the server hold (docs/limits.md, "Connections
// and requests"): connections in all and per address (closed at accept), idle time
// between requests, the time to read a started frame, request bytes being read or
// awaiting their answer (per connection and, reserved before the body is read, for the
// whole server), and response bytes queued for a client that does not read (per
// connection and server-wide, with a write timeout that closes a client taking none).
// While a limit holds a connection back, its reader stops reading the socket: TCP
// backpressure, never a goroutine or a buffer per waiting request. Server.Stats counts
// each limit's hits, and the connections opened and closed.
//
// # Listeners and TLS
//
// A Server accepts on one or more named listeners (ListenAll; listeners.go parses
// Kafka's listeners syntax). Connections of all listeners share the server's ids,
// limits and budgets. A listener with a tls.Config wraps each connection in a
// *tls.Conn whose handshake runs on the reader before the first request, bounded by the
// request read timeout (tls.go); such a connection has no raw socket, so direct writes
// never happen on it, and its writer writes in 64 KiB pieces with a deadline each
// (writer.go). Every request carries its listener's name and the connection's principal
// (User:ANONYMOUS, or the verified client certificate's subject). TLSSettings
// (tlsconfig.go) builds a listener's tls.Config from Kafka's ssl.* settings (PEM only)
// and reloads a keystore file when it changes.
//
// # Metrics
//
// With Options.Observer set, each answered request is reported once to it
// (observe.go) with its key, version, response and the time from its decoding to its
// answer; without one, no clock is read per request.
//
// # Ownership
//
// A request's body buffer is allocated per request and never reused, so the decoded
// message (whose byte fields, such as Produce's record batches, alias the body) can be
// kept by the node for as long as it likes. A response handed to Reply belongs to the
// server from then on: the broker must not change it afterwards, because the writer
// encodes it later on its own goroutine.
package net
