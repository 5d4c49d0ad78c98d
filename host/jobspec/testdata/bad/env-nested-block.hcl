# want: 8:9: Unexpected "inner" block
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      env {
        inner {
          A = "b"
        }
      }
    }
  }
}
