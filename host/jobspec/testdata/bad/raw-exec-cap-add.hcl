# want: 9:9: Unsupported argument
# want: 10:9: Unsupported argument
job "a" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
        cap_add = ["net_raw"]
        ipc_mode = "host"
      }
    }
  }
}
