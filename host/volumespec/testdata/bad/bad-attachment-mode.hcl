# want: 7:21: Invalid attachment_mode
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "filesystem"
}
