# want: 7:19: Invalid command
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = ""
      }
    }
  }
}
