# want: 5:16: Invalid capacity_min
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capacity_min = 1.5
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
