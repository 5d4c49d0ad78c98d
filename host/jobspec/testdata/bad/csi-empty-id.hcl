# want: 8:16: Invalid plugin id
job "a" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config { command = "mockcsi" }
      csi_plugin {
        id   = ""
        type = "node"
      }
    }
  }
}
