# want: 8:20: Invalid checksum
job "a" {
  group "g" {
    task "t" {
      driver = "go_plugin"
      config {
        command  = "mockcsi"
        checksum = "md5:d41d8cd98f00b204e9800998ecf8427e"
      }
    }
  }
}
