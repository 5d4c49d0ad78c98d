# want: 3:13: Unsupported volume type
id        = "v1"
type      = "host"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
