# want: 8:44: Unknown variable
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
        args    = ["${NOMAD_ALLOC_ID}", "${HOME}"]
      }
    }
  }
}
