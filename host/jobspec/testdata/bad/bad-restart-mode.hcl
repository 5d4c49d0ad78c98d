# want: 5:14: Invalid restart mode
job "a" {
  group "g" {
    restart {
      mode = "forever"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
