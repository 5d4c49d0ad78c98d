job "sleep" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}
