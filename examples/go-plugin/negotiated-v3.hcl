# The same binary offered protocol version 3 only: it serves its gRPC KV. A
# consumer reattaches with VersionedPlugins {3: kv → shared.KVGRPCPlugin}.
# (Offered [2, 3], go-plugin picks the highest both speak: 3.)
job "gp-negotiated-v3" {
  type = "service"

  group "plugin" {
    task "plugin" {
      driver = "go_plugin"

      config {
        command  = "kv-plugin"
        work_dir = "${NOMAD_TASK_DIR}"

        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [3]
        }

        plugin {
          type = "kv"
          name = "negotiated-v3"
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
