# go-plugin's examples/negotiated/plugin-go offered protocol version 2 only:
# it serves its net/rpc KV. Build: go build -o kv-plugin
# github.com/hashicorp/go-plugin/examples/negotiated/plugin-go. A consumer
# reattaches with VersionedPlugins {2: kv → shared.KVPlugin}.
job "gp-negotiated-v2" {
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
          protocol_versions  = [2]
        }

        plugin {
          type = "kv"
          name = "negotiated-v2"
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
