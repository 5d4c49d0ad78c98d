# want: 4:3: Unsupported argument
data_dir = "/var/lib/pluginhost"
exec {
  default_pid_mode = "host"
}
