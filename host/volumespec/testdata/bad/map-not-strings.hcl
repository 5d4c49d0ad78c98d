# want: 9:14: Incorrect attribute value type
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
parameters = { size = ["a"] }
