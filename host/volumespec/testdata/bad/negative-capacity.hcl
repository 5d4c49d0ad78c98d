# want: 5:16: Invalid capacity_max
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capacity_max = "-1G"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
