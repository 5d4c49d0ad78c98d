# want: 8:25: Value out of range
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      logs {
        max_files     = 0
      }
    }
  }
}
