# want: 5:12: Extraneous label for capability
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability "rw" {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
