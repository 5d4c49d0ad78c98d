# want: 10:34: Invalid stage_publish_base_dir
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "mockcsi" }
      csi_plugin {
        id                     = "mockcsi"
        type                   = "node"
        stage_publish_base_dir = "/csi/stage"
      }
    }
  }
}
