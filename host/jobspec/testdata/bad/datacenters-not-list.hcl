# want: 3:17: Incorrect attribute value type
job "a" {
  datacenters = { dc = 1 }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
