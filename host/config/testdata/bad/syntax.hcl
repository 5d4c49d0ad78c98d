# want: 3:1: Argument or block definition required
data_dir = "/var/lib/pluginhost"
[
