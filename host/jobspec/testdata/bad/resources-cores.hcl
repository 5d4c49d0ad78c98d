# want: 9:9: Unsupported cores
job "a" {
  group "g" {
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      resources {
        cpu   = 500
        cores = 2
      }
    }
  }
}
