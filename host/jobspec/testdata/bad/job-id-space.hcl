# want: 2:5: Invalid job ID
job "my job" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
