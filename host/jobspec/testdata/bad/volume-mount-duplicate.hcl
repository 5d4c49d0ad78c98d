# want: 19:23: Duplicate destination
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
        destination = "/srv/d"
      }
      volume_mount {
        volume      = "data"
        destination = "/srv/d/"
      }
    }
  }
}
