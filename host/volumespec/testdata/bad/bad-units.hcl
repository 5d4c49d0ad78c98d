# want: 6:16: Invalid capacity_min
# want: 7:16: Invalid capacity_max
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capacity_min = "10 GiBs"
capacity_max = "1,000G"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
