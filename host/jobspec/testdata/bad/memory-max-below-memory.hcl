# want: 9:22: Invalid memory_max
job "a" {
  group "g" {
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      resources {
        memory     = 256
        memory_max = 128
      }
    }
  }
}
