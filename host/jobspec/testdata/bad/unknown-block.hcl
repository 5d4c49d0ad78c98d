# want: 5:5: Unsupported block type
job "a" {
  group "g" {
    task "t" {
    template {
      data = "x"
    }
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
