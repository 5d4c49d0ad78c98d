# want: 6:22: Invalid duration
job "a" {
  group "g" {
    task "t" {
      driver       = "raw_exec"
      kill_timeout = 5
      config { command = "/bin/true" }
    }
  }
}
