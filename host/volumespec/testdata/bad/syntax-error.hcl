# want: 5:12: Unclosed configuration block
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode = "single-node-writer"
