# want: 7:7: Invalid restart policy
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      restart {
        attempts = 0
        mode     = "delay"
      }
    }
  }
}
