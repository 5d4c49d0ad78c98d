# want: 6:23: Variables not allowed
job "a" {
  group "g" {
    volume "data" {
      type   = "csi"
      source = "vol-${NOMAD_ALLOC_INDEX}"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
