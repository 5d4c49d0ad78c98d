# want: 6:25: Invalid volume source
job "a" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "my vol/1"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
