# want: 3:20: Invalid denied_host_uids
data_dir = "/var/lib/pluginhost"
denied_host_uids = "0,20-10"
