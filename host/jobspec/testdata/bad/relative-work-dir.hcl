# want: 8:20: Invalid work_dir
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command  = "/bin/true"
        work_dir = "data"
      }
    }
  }
}
