# want: 8:16: Invalid value
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
        args = ["a", null]
      }
    }
  }
}
