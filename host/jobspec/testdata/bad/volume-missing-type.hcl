# want: 4:5: Missing volume type
job "a" {
  group "g" {
    volume "data" {
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
