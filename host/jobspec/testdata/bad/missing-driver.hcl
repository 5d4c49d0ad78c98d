# want: 4:5: Missing driver
job "a" {
  group "g" {
    task "t" {
      config { command = "/bin/true" }
    }
  }
}
