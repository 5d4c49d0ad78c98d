# want: 3:8: Invalid name
id   = "v1"
name = "data\nbase"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
