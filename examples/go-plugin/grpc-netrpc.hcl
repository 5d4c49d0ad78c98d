# go-plugin's examples/grpc/plugin-go-netrpc: the KV store over net/rpc,
# unchanged. A consumer reattaches to kv/kv_netrpc and dispenses "kv" with
# examples/grpc/shared.PluginMap (its examples/grpc main.go with
# KV_PROTO=netrpc).
job "gp-grpc-netrpc" {
  type = "service"

  group "plugin" {
    task "plugin" {
      driver = "go_plugin"

      config {
        command  = "plugin-go-netrpc"
        work_dir = "${NOMAD_TASK_DIR}"

        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1]
        }

        plugin {
          type = "kv"
          name = "kv_netrpc"
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
