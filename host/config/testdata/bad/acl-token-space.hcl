# want: 4:16: Invalid read_token
data_dir = "/var/lib/pluginhost"
acl {
  read_token = "has spaces in it, which a header would mangle"
}
