# The demo: mockcsi, a CSI plugin written with pluginhost's sdk, run as a
# monolith (controller + node) CSI plugin through the go_plugin driver.
#
#   pluginhost agent -dev            # or: make run
#   pluginhost job run examples/demo.hcl
#
# go_plugin launches the binary through a go-plugin handshake, so the agent
# can reattach to it after its own restart. To run the same job on Nomad,
# change the driver to "raw_exec" and add --endpoint (see
# mockcsi-raw-exec.hcl).
job "demo" {
  type = "service"

  group "csi" {
    count = 1

    task "mockcsi" {
      driver = "go_plugin"

      config {
        # A bare name is looked up on the task's PATH, then the agent's.
        command = "mockcsi"
        args = [
          "--node-id=${node.unique.name}",
          # The plugin's volumes must outlive its allocation: an update of
          # this job starts a new one, which would otherwise start empty
          # while the agent still has every volume registered. Three levels
          # up from the allocation dir is the agent's data dir, here as on
          # Nomad (<data_dir>/alloc/<alloc id>/alloc).
          "--state-dir=${NOMAD_ALLOC_DIR}/../../../plugin-state/mockcsi",
        ]
      }

      csi_plugin {
        id             = "mockcsi"
        type           = "monolith"
        health_timeout = "30s"
      }

      resources {
        cpu    = 100
        memory = 64
      }

      logs {
        max_files     = 3
        max_file_size = 5
      }
    }
  }
}
