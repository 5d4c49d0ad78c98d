# want: 6:32: Mismatched bracket
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { args = ["a", "b") }
    }
  }
}
