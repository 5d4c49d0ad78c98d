# want: 4:19: Invalid duration
data_dir = "/var/lib/pluginhost"
csi {
  probe_timeout = "soon"
}
