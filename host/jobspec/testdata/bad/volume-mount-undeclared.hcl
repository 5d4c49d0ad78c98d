# want: 8:23: Undeclared volume
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
