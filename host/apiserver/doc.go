// Package apiserver is the agent's HTTP API server: a JSON server over a unix
// socket (or a loopback TCP port) in front of a Backend. The wire types, the
// errors a client sees (ErrNotFound), the addresses, and the Go client the
// CLI, the end-to-end tests and consumers use are in package
// github.com/pluginhost/pluginhost/api, a module of its own with no server
// code in it; this package imports it for the wire types. Importers that
// need both name this one apiserver.
//
// # Design
//
// The server knows nothing about jobs, allocations or plugins. It serves a
// Backend, an interface the agent (package host) implements, and does only
// what HTTP needs: routing, decoding and checking input, mapping errors to
// status codes, streaming. That keeps every rule about the agent's objects
// in one place and lets this package be tested against an in-memory backend
// over a real socket.
//
// Paths follow Nomad's where the concept is the same (/v1/jobs, /v1/job/<id>,
// /v1/allocation/<id>, /v1/client/fs/logs/<alloc>, /v1/plugins?type=csi,
// /v1/plugin/csi/<id>, /v1/event/stream, /v1/agent/self, /v1/agent/health),
// and so do the JSON field names of package api's wire types. The registry of
// every plugin type (/v1/registry/plugins, /v1/plugin/<type>/<name>) is
// pluginhost's own, served when the backend implements RegistryBackend, and
// so is /v1/plugins without a type (Nomad requires type=csi): every plugin
// of every type, CSI rows with exactly the fields type=csi gives them.
//
// # Invariants
//
//   - Every request passes the guard (guard.go) before any route: on TCP a
//     token (X-Nomad-Token or Authorization: Bearer; the read token only for
//     GET, never for management routes), everywhere no Origin, no
//     cross-site Sec-Fetch-Site, a JSON body on mutating requests, and on TCP
//     a loopback Host. The unix socket's mode is its authentication. No
//     answer has CORS headers; the route table (routes.go) is what the
//     security tests walk.
//   - Every non-2xx answer is JSON ErrorResponse{error, field}: 400 for input
//     the user can fix (naming the field), 401 without a token, 403 for a
//     wrong token or a foreign Host or Origin, 404 for unknown IDs (errors that
//     wrap api.ErrNotFound), 405 for a wrong method, 413 for an oversized body,
//     415 for a body that is not JSON, 500 otherwise. Backends signal with api.ErrNotFound, *FieldError and
//     *AmbiguousError; writeError is the only place that maps them.
//   - A panic in a handler or backend becomes a logged 500; the server stays
//     up. Input is checked before the backend sees it: a submitted job has no
//     nil groups or tasks and names everything the backend will index by.
//   - Every request context descends from the server's base context, which
//     Shutdown cancels before waiting: streams (events, followed logs) end on
//     shutdown instead of holding it up.
//   - The event stream sends its status line only after Backend.Events has
//     subscribed, so a client holding the response sees every later event.
//     Clients subscribe first and act second (job run does) and never poll.
//     Each event is one JSON line, flushed once no more events are queued
//     (a burst shares a flush); idle streams carry "{}"
//     heartbeats so both ends notice a dead peer.
//   - Log streams send their status on the first byte; an error after that
//     travels in the X-Pluginhost-Error trailer, so a truncated log never
//     looks complete to api.Client.
//   - A unix socket is created 0600 in a 0700 directory (created if
//     missing), replaces only a stale socket (one that refuses connections),
//     never a live socket or another file, and is removed on shutdown. Paths
//     over sun_path's 107 bytes are refused by api.ParseAddr instead of failing
//     later as dial timeouts. TCP is loopback-only: it is plain HTTP, and the
//     tokens must not cross a network.
//   - Tokens are compared in constant time, never read from the URL, never
//     logged, and answered only by /v1/acl/tokens to the management role.
//   - No client can hold the server's descriptors: each listener caps its
//     connections (Limits.MaxConns: 1024, or a quarter of a smaller soft
//     RLIMIT_NOFILE), and at the cap closes the connection that has
//     waited longest for a request, never one in a request (connlimit.go).
//     The header (10 s), request (30 s) and idle (90 s) timeouts are
//     http.Server's; the write timeout (60 s) is per write, moved by the
//     recorder before each write and flush, so a stream lasts as long as
//     it is read. A refused request's connection is closed after the
//     answer.
package apiserver
