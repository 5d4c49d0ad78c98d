# go-plugin's examples/grpc/plugin-python, unchanged. It needs Python 3 with
# grpcio and grpcio-health-checking, and it listens on TCP 127.0.0.1:1234
# (fixed: one instance per machine). args names its plugin.py in the go-plugin
# module: $(go env GOMODCACHE)/github.com/hashicorp/go-plugin@v1.8.0/examples/grpc/plugin-python/plugin.py.
# A consumer reattaches to kv/kv_python and dispenses "kv_grpc".
job "gp-grpc-python" {
  type = "service"

  group "plugin" {
    task "plugin" {
      driver = "go_plugin"

      config {
        command  = "python3"
        args     = ["/path/to/go-plugin/examples/grpc/plugin-python/plugin.py"]
        work_dir = "${NOMAD_TASK_DIR}"

        handshake {
          magic_cookie_key   = "BASIC_PLUGIN"
          magic_cookie_value = "hello"
          protocol_versions  = [1]
        }

        plugin {
          type = "kv"
          name = "kv_python"
        }
      }

      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
