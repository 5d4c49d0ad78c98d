# want: 3:20: Invalid denied_host_gids
data_dir = "/var/lib/pluginhost"
denied_host_gids = "wheel"
