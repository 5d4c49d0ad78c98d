# want: 4:13: Invalid number
job "a" {
  group "g" {
    count = 1.5
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
