# want: 9:20: Invalid pid_mode
job "a" {
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command  = "/bin/true"
        # Nomad's exec: "private" or "host".
        pid_mode = "shared"
      }
    }
  }
}
