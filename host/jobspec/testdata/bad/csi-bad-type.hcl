# want: 9:16: Invalid plugin type
job "a" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config { command = "mockcsi" }
      csi_plugin {
        id   = "mockcsi"
        type = "both"
      }
    }
  }
}
