# want: 3:10: Invalid job type
job "a" {
  type = "daemon"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
