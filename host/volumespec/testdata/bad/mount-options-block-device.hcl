# want: 9:1: Invalid mount_options
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "block-device"
}
mount_options {
  fs_type = "ext4"
}
