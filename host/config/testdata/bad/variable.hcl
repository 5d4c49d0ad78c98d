# want: 2:15: Variables not allowed
data_dir = "${HOME}/pluginhost"
