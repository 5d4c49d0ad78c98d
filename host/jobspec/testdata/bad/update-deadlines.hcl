# want: 4:24: Invalid update block
job "a" {
  update {
    min_healthy_time = "10m"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
