# want: 3:3: Unsupported argument
job "a" {
  region = "global"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
