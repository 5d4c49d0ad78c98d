# want: 5:25: Unsupported volume type
job "a" {
  group "g" {
    volume "data" {
      type            = "host"
      source          = "vol1"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
