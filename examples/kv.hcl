# plugins/kv, a plugin that is not CSI, written with pluginhost's sdk: the
# sdk's handshake needs no handshake block, only what to register it as.
#
#   pluginhost job run examples/kv.hcl
#   pluginhost plugin status                     # lists kv/kv-main
#   go run ./examples/kvclient put greeting hello
#   go run ./examples/kvclient loop 200ms        # then change this file
#                                                # (e.g. the env) and run it
#                                                # again: the client moves
#                                                # to the new allocation
job "kv" {
  type = "service"

  group "kv" {
    # The new allocation must be healthy (its health service SERVING) for a
    # second before the old one is stopped.
    update {
      min_healthy_time = "1s"
      healthy_deadline = "1m"
    }

    restart {
      attempts = 3
      interval = "1m"
      delay    = "1s"
      mode     = "delay"
    }

    task "kv" {
      driver = "go_plugin"

      config {
        command = "kv"

        plugin {
          type = "kv"
          name = "kv-main"
        }
      }

      env {
        KV_GENERATION = "1"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
