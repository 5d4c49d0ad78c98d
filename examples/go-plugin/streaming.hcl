# go-plugin's examples/streaming/plugin: gRPC streams in both directions,
# unchanged. Build: go build -o streamer
# github.com/hashicorp/go-plugin/examples/streaming/plugin. A consumer
# reattaches to streamer/streamer and dispenses "streamer" with
# examples/streaming/shared.StreamerPlugin.
job "gp-streaming" {
  type = "service"

  group "plugin" {
    task "plugin" {
      driver = "go_plugin"

      config {
        command  = "streamer"
        work_dir = "${NOMAD_TASK_DIR}"

        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1]
        }

        plugin {
          type = "streamer"
          name = "streamer"
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
