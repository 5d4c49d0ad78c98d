# want: 4:5: Missing config
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
    }
  }
}
