# want: 3:17: Invalid datacenters
job "a" {
  datacenters = []
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
