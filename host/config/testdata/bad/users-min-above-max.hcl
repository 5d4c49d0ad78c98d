# want: 3:1: Invalid users block
data_dir = "/var/lib/pluginhost"
users {
  dynamic_user_min = 90000
  dynamic_user_max = 80000
}
