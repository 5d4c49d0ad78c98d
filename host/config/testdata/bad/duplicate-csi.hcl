# want: 4:1: Duplicate csi block
data_dir = "/var/lib/pluginhost"
csi {}
csi {}
