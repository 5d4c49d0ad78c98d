# want: 7:7: Missing plugin id
job "a" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config { command = "mockcsi" }
      csi_plugin {
        type = "monolith"
      }
    }
  }
}
