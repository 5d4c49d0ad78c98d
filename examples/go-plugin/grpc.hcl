# go-plugin's examples/grpc/plugin-go-grpc: the KV store over gRPC,
# unchanged (examples/go-plugin-kv.hcl is the same plugin). A consumer
# reattaches to kv/kv_grpc and dispenses "kv_grpc" with
# examples/grpc/shared.PluginMap, or dials pluginhost:///kv/kv_grpc.
job "gp-grpc" {
  type = "service"

  group "plugin" {
    task "plugin" {
      driver = "go_plugin"

      config {
        command  = "plugin-go-grpc"
        work_dir = "${NOMAD_TASK_DIR}"

        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1]
        }

        plugin {
          type = "kv"
          name = "kv_grpc"
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
