# want: 3:13: Invalid node_name
data_dir  = "/var/lib/pluginhost"
node_name = ""
