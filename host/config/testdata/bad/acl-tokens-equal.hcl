# want: 3:1: Invalid acl block
data_dir = "/var/lib/pluginhost"
acl {
  management_token = "0123456789abcdef0123"
  read_token       = "0123456789abcdef0123"
}
