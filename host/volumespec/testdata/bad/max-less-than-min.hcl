# want: 6:16: Invalid capacity range
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capacity_min = "10GiB"
capacity_max = "10G"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
