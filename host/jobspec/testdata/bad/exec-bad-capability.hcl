# want: 8:20: Invalid capability
job "a" {
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command  = "/bin/true"
        cap_add  = ["net_raw", "CAP_FLY"]
      }
    }
  }
}
