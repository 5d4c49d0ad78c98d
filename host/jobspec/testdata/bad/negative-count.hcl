# want: 4:13: Value out of range
job "a" {
  group "g" {
    count = -2
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
