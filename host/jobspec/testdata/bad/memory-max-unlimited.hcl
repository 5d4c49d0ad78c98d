# want: 8:22: Unsupported memory_max
job "a" {
  group "g" {
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      resources {
        memory_max = -1
      }
    }
  }
}
