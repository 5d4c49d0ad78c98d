# want: 3:1: Invalid users block
data_dir = "/var/lib/pluginhost"
users {
  dynamic_user_min = -1
}
