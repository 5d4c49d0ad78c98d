# A go-plugin plugin that knows nothing about pluginhost: go-plugin's own
# gRPC example (examples/grpc/plugin-go-grpc in the go-plugin module, a KV
# store), run unchanged. Build it with `make build` (into bin/), or:
#
#   go build github.com/hashicorp/go-plugin/examples/grpc/plugin-go-grpc
#
# and run this job with the binary on the agent's PATH:
#
#   pluginhost job run examples/go-plugin-kv.hcl
#   pluginhost plugin status          # lists kv/kv_grpc
#
# The driver's config names the plugin's handshake (its magic cookie and
# protocol versions) and what pluginhost registers it as. pluginhost checks
# its health with go-plugin's gRPC health service and registers it as
# plugin type "kv", name "kv_grpc": consumers find it at
# pluginhost:///kv/kv_grpc (see examples/kvclient for the resolver; this
# plugin serves go-plugin's proto.KV service, not plugins/kv's).
job "go-plugin-kv" {
  type = "service"

  group "kv" {
    task "plugin-go-grpc" {
      driver = "go_plugin"

      config {
        command = "plugin-go-grpc"

        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1]
        }

        plugin {
          type           = "kv"
          name           = "kv_grpc"
          health_timeout = "30s"
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
