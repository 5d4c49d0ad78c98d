# want: 3:1: Unexpected external_id
id          = "v1"
external_id = "vol-0abc"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
