# want: 3:8: Invalid addr
data_dir = "/var/lib/pluginhost"
addr = "127.0.0.1:99999"
