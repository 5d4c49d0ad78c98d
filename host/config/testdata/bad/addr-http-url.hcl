# want: 3:8: Invalid addr
data_dir = "/var/lib/pluginhost"
addr = "http://127.0.0.1:4646"
