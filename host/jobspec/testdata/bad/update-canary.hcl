# want: 5:16: Unsupported update setting
job "a" {
  group "g" {
    update {
      canary = 1
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
