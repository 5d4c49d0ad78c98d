# want: 4:3: Invalid chroot_env
data_dir = "/var/lib/pluginhost"
chroot_env = {
  "/srv/shared" = "/local/shared"
}
