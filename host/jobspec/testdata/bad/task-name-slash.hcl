# want: 4:10: Invalid task name
job "a" {
  group "g" {
    task "../etc" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
