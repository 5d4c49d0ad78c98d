# want: 6:16: Invalid user
job "a" {
  group "g" {
    task "t" {
      driver = "exec"
      user   = "root:root"
      config { command = "/bin/true" }
    }
  }
}
