# want: 5:3: Invalid chroot_env
data_dir = "/var/lib/pluginhost"
chroot_env = {
  "/bin" = "/bin"
  "etc"  = "/etc"
}
