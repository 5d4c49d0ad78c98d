# A batch job: it runs to completion once. A zero exit is success; a failure
# is retried by the batch restart defaults (3 attempts in 24h, 15s apart)
# unless the restart block says otherwise.
job "hello-batch" {
  type = "batch"

  group "once" {
    restart {
      attempts = 1
      delay    = "1s"
    }

    task "hello" {
      driver = "raw_exec"

      config {
        command  = "/bin/sh"
        args     = ["-c", "echo hello from $NOMAD_TASK_NAME > $NOMAD_ALLOC_DIR/hello.txt"]
        work_dir = "${NOMAD_TASK_DIR}"
      }

      logs {
        max_files     = 1
        max_file_size = 1
      }
    }
  }
}
