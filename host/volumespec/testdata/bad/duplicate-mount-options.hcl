# want: 12:1: Duplicate mount_options block
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
mount_options {
  fs_type = "ext4"
}
mount_options {
  fs_type = "xfs"
}
