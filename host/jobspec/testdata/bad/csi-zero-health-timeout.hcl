# want: 10:26: Invalid health_timeout
job "a" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config { command = "mockcsi" }
      csi_plugin {
        id             = "mockcsi"
        type           = "node"
        health_timeout = "0s"
      }
    }
  }
}
