# want: 3:13: Invalid log_level
data_dir  = "/var/lib/pluginhost"
log_level = "verbose"
