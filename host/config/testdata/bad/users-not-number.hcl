# want: 4:22: Invalid number
data_dir = "/var/lib/pluginhost"
users {
  dynamic_user_min = 1.5
}
