# want: 2:1: Missing group
job "a" {
  type = "service"
}
