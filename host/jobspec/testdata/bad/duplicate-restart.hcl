# want: 5:5: Duplicate restart block
job "a" {
  group "g" {
    restart { attempts = 1 }
    restart { attempts = 2 }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
