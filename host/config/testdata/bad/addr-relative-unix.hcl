# want: 3:8: Invalid addr
data_dir = "/var/lib/pluginhost"
addr = "unix://relative.sock"
