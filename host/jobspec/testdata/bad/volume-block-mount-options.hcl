# want: 9:7: Invalid mount_options
job "a" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "vol1"
      access_mode     = "single-node-writer"
      attachment_mode = "block-device"
      mount_options {
        fs_type = "ext4"
      }
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
