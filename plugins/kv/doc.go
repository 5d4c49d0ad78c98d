// Command kv is pluginhost's example of a plugin that is not CSI: an
// in-memory key/value store served over gRPC (service pluginhost.kv.v1.KV,
// kvpb/kv.proto) and built with the sdk, which gives it go-plugin's
// handshake, SIGPIPE/SIGTERM safety, a log file and a standalone mode.
//
// Under pluginhost (examples/kv.hcl) it is a go_plugin task whose config
// says `plugin { type = "kv" name = "..." }`; consumers reach it with the
// API client's resolver at pluginhost:///kv/<name> (examples/kvclient).
// Run any other way it serves on --endpoint (default $CSI_ENDPOINT):
//
//	kv --endpoint unix:///tmp/kv.sock
//
// Every answer names the instance that gave it (its allocation ID under
// pluginhost, else its pid), so that a consumer can watch a rolling update
// or a failover move it to another instance. The store is in memory: a new
// instance starts empty.
//
// `make generate` regenerates kvpb from kvpb/kv.proto (buf, protoc-gen-go
// and protoc-gen-go-grpc at the versions the Makefile pins).
package main
