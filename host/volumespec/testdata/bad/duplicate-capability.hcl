# want: 9:1: Duplicate capability
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
