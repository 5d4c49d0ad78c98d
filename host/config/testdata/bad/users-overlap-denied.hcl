# want: 4:1: Invalid users block
data_dir = "/var/lib/pluginhost"
denied_host_uids = "0,85000-86000"
users {
  dynamic_user_min = 80000
  dynamic_user_max = 89999
}
