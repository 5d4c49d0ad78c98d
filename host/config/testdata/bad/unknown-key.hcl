# want: 3:1: Unsupported argument
data_dir = "/var/lib/pluginhost"
bind_addr = "0.0.0.0"
