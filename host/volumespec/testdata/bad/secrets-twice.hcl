# want: 10:1: Duplicate secrets block
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
secrets = { token = "a" }
secrets {
  token = "b"
}
