# want: 5:22: Unsupported health_check
job "a" {
  group "g" {
    update {
      health_check = "manual"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
