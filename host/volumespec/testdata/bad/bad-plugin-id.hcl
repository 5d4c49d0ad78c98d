# want: 4:13: Invalid plugin_id
id        = "v1"
type      = "csi"
plugin_id = "-mock csi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
