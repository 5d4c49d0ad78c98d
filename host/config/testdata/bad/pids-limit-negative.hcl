# want: 3:14: Invalid pids_limit
data_dir = "/var/lib/pluginhost"
pids_limit = -1
