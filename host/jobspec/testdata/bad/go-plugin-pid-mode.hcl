# want: 8:9: Unsupported argument
job "a" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config {
        command  = "mockcsi"
        pid_mode = "private"
      }
    }
  }
}
