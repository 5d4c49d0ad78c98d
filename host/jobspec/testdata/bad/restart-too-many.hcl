# want: 4:5: Invalid restart policy
job "a" {
  group "g" {
    restart {
      attempts = 10
      interval = "1m"
      delay    = "15s"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
