# want: 7:25: Invalid access_mode
job "a" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "vol1"
      access_mode     = "read-write-many"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
