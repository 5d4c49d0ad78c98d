# want: 8:9: Unsupported argument
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command  = "/bin/true"
        checksum = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
      }
    }
  }
}
