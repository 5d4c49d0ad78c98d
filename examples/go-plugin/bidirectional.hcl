# go-plugin's examples/bidirectional/plugin-go-grpc: a counter that calls back
# into its host through go-plugin's GRPCBroker (the host's AddHelper),
# unchanged. Build: go build -o counter-go-grpc
# github.com/hashicorp/go-plugin/examples/bidirectional/plugin-go-grpc. A
# consumer reattaches to counter/counter and dispenses "counter" with
# examples/bidirectional/shared.PluginMap.
job "gp-bidirectional" {
  type = "service"

  group "plugin" {
    task "plugin" {
      driver = "go_plugin"

      config {
        command  = "counter-go-grpc"
        work_dir = "${NOMAD_TASK_DIR}"

        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1]
        }

        plugin {
          type = "counter"
          name = "counter"
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
