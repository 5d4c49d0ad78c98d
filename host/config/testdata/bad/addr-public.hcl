# want: 3:8: Invalid addr
data_dir = "/var/lib/pluginhost"
addr = "0.0.0.0:4646"
