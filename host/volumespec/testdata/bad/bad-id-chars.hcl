# want: 2:6: Invalid id
id = "vol/1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
