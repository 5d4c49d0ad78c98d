# A plain long-running raw_exec service: no CSI, no go-plugin. Handy to watch
# restarts, logs and `alloc status` without a plugin in the way.
job "sleep" {
  type = "service"

  meta {
    owner = "examples"
  }

  group "sleepers" {
    count = 2

    restart {
      attempts = 3
      interval = "5m"
      delay    = "5s"
      mode     = "delay"
    }

    task "sleep" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"allocation $NOMAD_ALLOC_INDEX of ${NOMAD_JOB_ID} started\"; exec sleep 1000000"]
      }

      env {
        GREETING = "hello from ${NOMAD_ALLOC_NAME}"
      }

      kill_signal = "SIGTERM"
    }
  }
}
