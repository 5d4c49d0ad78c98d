# want: 4:22: Invalid management_token
data_dir = "/var/lib/pluginhost"
acl {
  management_token = "short"
}
