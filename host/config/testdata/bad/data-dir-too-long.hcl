# want: 2:12: data_dir too long for the API socket
data_dir = "/var/lib/pluginhost/this/path/is/far/too/long/for/a/unix/socket/to/be/bound/below/it/at/all/really/truly"
