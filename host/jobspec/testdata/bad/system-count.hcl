# want: 5:13: Invalid count
job "a" {
  type = "system"
  group "g" {
    count = 3
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
