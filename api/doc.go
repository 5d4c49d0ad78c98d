// Package api is the Go client of the pluginhost agent's HTTP API: the
// Client (one method per endpoint), the wire types, the agent's addresses
// (ParseAddr, DefaultAddr) and per-user tokens, the gRPC resolver for
// pluginhost:///TYPE/NAME, and the go-plugin reattach helpers
// (ReattachConfig, HostedClientConfig, ReattachFollower). The server is in
// github.com/pluginhost/pluginhost/host/api and imports this package for
// its wire types, so the CLI, the agent, the tests and every consumer share
// one definition of each.
//
// # No server in it
//
// This package imports only the standard library, gRPC and go-plugin (and
// golang.org/x/sys, which both already need): no HCL, go-cty, Prometheus,
// bbolt, CSI spec or host/... package. TestClientDeps keeps it so.
// examples/kvclient, a program that only calls a hosted plugin, linked 399
// packages when the client lived in host/api, and links 354 now (gRPC and
// go-plugin are most of them).
//
// It is a Go module of its own, as Nomad's api is, so that a consumer's
// module graph holds this module, gRPC and go-plugin and not the agent's
// dependencies. Were it a package of the repository's module, a consumer's
// go.mod would still name none of the agent's modules, but its module graph
// (go list -m all, what go mod tidy resolves and go.sum records) would
// carry every module the agent requires: 88 modules for a program that
// imports one package of the repository's module, against 56 for one that
// imports this module. The repository's go.mod requires it with a replace
// to ./api (as Nomad's does), so a checkout builds as one; `go test ./...`
// at the root does not descend into a nested module, which is why the
// Makefile vets, tests and fuzzes it separately.
//
// # Systems
//
// The agent runs on Linux; this package builds wherever go-plugin does
// (`make cross` checks darwin, windows and linux/arm64). What differs by
// system is behind build tags: how a reattached plugin's process is
// watched (procwatch.go: a pidfd on Linux, kill(pid, 0) every 250 ms on
// other unix systems, a process handle on Windows), and the default
// address and its directory check (on Windows
// %LOCALAPPDATA%\pluginhost\api.sock, see windowsDefaultSocketPath). The
// "portable" build tag selects the other unix systems' watch on Linux,
// so that our tests run it.
//
// # Wire types
//
// The wire types (types.go, plugin_types.go, volume_types.go and the rest)
// are a deliberate copy of the agent's state, as Nomad's api types are of
// its structs: the agent converts its own types into these at the API's
// edge (package host), and nothing here is shared with the agent's state,
// job spec or volume spec. Field names follow Nomad's api where the
// concept is the same. A parsed job (Client.RegisterJob) is the one
// exception: it is sent as the agent's job spec JSON, untyped here.
//
// # Resolver
//
// NewResolverBuilder is a gRPC resolver for pluginhost:///TYPE/NAME: a
// program's grpc.ClientConn dials the active instance's unix socket
// directly and follows the agent's PluginActiveInstance events (subscribed
// before the first lookup, resubscribed with backoff) to the next instance.
// It is passed per connection (grpc.WithResolvers), never registered
// globally.
package api
