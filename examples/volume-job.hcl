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
# /srv/data exists in the task's own mount namespace only (an empty mount
# point is created on the host if missing); `job validate` says so. Nomad
# does not run this file as it is: its raw_exec cannot mount volumes and the
# allocation fails with "no task supports CSI" (`job validate` and `job run`
# warn); there the task needs driver = "exec".
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
      driver = "raw_exec"

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
