# want: 3:3: Missing task
job "a" {
  group "g" {
    count = 1
  }
}
