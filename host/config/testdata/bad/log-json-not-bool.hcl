# want: 3:12: Incorrect attribute value type
data_dir = "/var/lib/pluginhost"
log_json = "yes please"
