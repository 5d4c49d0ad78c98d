# want: 8:18: Value out of range
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      resources {
        memory = 5
      }
    }
  }
}
