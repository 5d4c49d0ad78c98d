# want: 6:21: Invalid kill_signal
job "a" {
  group "g" {
    task "t" {
      driver      = "raw_exec"
      kill_signal = "SIGCONT"
      config { command = "/bin/true" }
    }
  }
}
