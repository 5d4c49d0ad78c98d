# want: 15:7: Duplicate CSI plugin
job "a" {
  group "g" {
    task "one" {
      driver = "go_plugin"
      config { command = "mockcsi" }
      csi_plugin {
        id   = "mockcsi"
        type = "monolith"
      }
    }
    task "two" {
      driver = "go_plugin"
      config { command = "mockcsi" }
      csi_plugin {
        id   = "mockcsi"
        type = "node"
      }
    }
  }
}
