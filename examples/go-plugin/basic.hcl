# go-plugin's examples/basic: a net/rpc plugin (Greeter), unchanged.
# Build: go build -o greeter github.com/hashicorp/go-plugin/examples/basic/plugin
# (make build puts it in bin/). A consumer reattaches to greeter/greeter and
# dispenses "greeter" with examples/basic/shared.GreeterPlugin.
job "gp-basic" {
  type = "service"

  group "plugin" {
    task "plugin" {
      driver = "go_plugin"

      config {
        command  = "greeter"
        work_dir = "${NOMAD_TASK_DIR}"

        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1]
        }

        plugin {
          type = "greeter"
          name = "greeter"
        }
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
