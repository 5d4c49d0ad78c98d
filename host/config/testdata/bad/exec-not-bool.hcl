# want: 4:25: Incorrect attribute value type
data_dir = "/var/lib/pluginhost"
exec {
  allow_pid_mode_host = "yes"
}
