# want: 4:3: Unsupported argument
data_dir = "/var/lib/pluginhost"
acl {
  enabled = true
}
