# want: 4:75: Nesting too deep
job "a" {
  group "g" {
    count = (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
