# want: 7:19: Function calls not allowed
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = upper("/bin/true")
      }
    }
  }
}
