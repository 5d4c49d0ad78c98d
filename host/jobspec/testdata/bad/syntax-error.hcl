# want: 3:10: Invalid expression
job "a" {
  type = 
}
