# want: 7:10: Invalid job type
# want: 10:13: Value out of range
# want: 14:21: Invalid kill_signal
# want: 16:22: Unknown variable
# want: 18:7: Unsupported argument
job "many" {
  type = "servic"

  group "g" {
    count = -1

    task "t" {
      driver      = "raw_exec"
      kill_signal = "SIGSTOP"
      config {
        command = "${NOMAD_FOO}"
      }
      foo = 1
    }
  }
}
