# want: 9:1: Unsupported block type
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
constraint {
  attribute = "x"
}
