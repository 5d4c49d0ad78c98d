# want: 4:26: Invalid fingerprint_interval
data_dir = "/var/lib/pluginhost"
csi {
  fingerprint_interval = "10ms"
}
