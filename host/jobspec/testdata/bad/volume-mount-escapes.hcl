# want: 15:23: Invalid destination
job "a" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "vol1"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      volume_mount {
        volume      = "data"
        destination = "../x"
      }
    }
  }
}
