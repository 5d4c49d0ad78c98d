# want: 11:34: Invalid stage_publish_base_dir
job "a" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config { command = "mockcsi" }
      csi_plugin {
        id                     = "mockcsi"
        type                   = "monolith"
        mount_dir              = "/csi"
        stage_publish_base_dir = "/csi"
      }
    }
  }
}
