# want: 3:17: Invalid cgroup_parent
data_dir = "/var/lib/pluginhost"
cgroup_parent = "/"
