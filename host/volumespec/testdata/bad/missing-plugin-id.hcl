# want: 1:1: Missing plugin_id
id   = "v1"
type = "csi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
