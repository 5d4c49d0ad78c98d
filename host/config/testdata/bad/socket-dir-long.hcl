# want: 4:16: Invalid socket_dir
data_dir = "/var/lib/pluginhost"
plugin {
  socket_dir = "/run/pluginhost/a/directory/name/that/leaves/no/room/for/sockets"
}
