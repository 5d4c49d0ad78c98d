# want: 5:16: Unsupported driver
job "a" {
  group "g" {
    task "t" {
      driver = "docker"
      config { command = "/bin/true" }
    }
  }
}
