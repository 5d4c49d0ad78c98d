# A job that claims a CSI volume and writes to it: every start appends a line
# to /srv/data/log, so a second run finds the first run's lines.
#
#   make run                                        # the agent with the demo's mockcsi
#   pluginhost volume create examples/volumes/data.hcl
#   pluginhost job run examples/volume-job.hcl
#   pluginhost volume status data                   # the claim, published
#   pluginhost alloc logs <alloc>                   # the log so far
#   pluginhost job stop volume-job                  # unpublished, unstaged, released
#
# The task runs under the exec driver, as on Nomad (whose raw_exec cannot
# mount volumes: "no task supports CSI"): in a root of its own, as nobody,
# with /srv/data inside that root only. The same file runs unchanged on a
# Nomad client with the exec driver.
job "volume-job" {
  type = "service"

  group "app" {
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "writer" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"${NOMAD_ALLOC_ID} started\" >> /srv/data/log; cat /srv/data/log; exec sleep 1000000"]
      }

      volume_mount {
        volume      = "data"
        destination = "/srv/data"
      }
    }
  }
}
