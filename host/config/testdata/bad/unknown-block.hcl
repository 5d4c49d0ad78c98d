# want: 3:1: Unsupported block type
data_dir = "/var/lib/pluginhost"
client {
  enabled = true
}
