# want: 3:14: Incorrect attribute value type
data_dir = "/var/lib/pluginhost"
pids_limit = "lots"
