# want: 10:21: Invalid mount_dir
job "a" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config { command = "mockcsi" }
      csi_plugin {
        id        = "mockcsi"
        type      = "node"
        mount_dir = "csi"
      }
    }
  }
}
