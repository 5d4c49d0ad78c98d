# want: 4:16: Invalid socket_dir
data_dir = "/var/lib/pluginhost"
plugin {
  socket_dir = "sockets"
}
