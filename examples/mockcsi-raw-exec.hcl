# The same mockcsi binary as demo.hcl, run as an ordinary standalone CSI
# driver under raw_exec. This file runs unchanged on Nomad: the supervisor
# sets CSI_ENDPOINT to the plugin's socket and the flag passes it on, the way
# most third-party drivers want it.
job "mockcsi-standalone" {
  datacenters = ["*"]

  group "csi" {
    task "plugin" {
      driver = "raw_exec"

      config {
        command = "mockcsi"
        args = [
          "--endpoint=${CSI_ENDPOINT}",
          "--node-id=${node.unique.name}",
          # Outside the allocation, so that an update of this job keeps
          # the plugin's volumes (see demo.hcl): <data_dir>/plugin-state/...
          # of the agent, pluginhost's or Nomad's.
          "--state-dir=${NOMAD_ALLOC_DIR}/../../../plugin-state/mockcsi-standalone",
        ]
      }

      csi_plugin {
        id        = "mockcsi-standalone"
        type      = "monolith"
        mount_dir = "/csi"
      }

      kill_signal  = "SIGTERM"
      kill_timeout = "10s"
    }
  }
}
