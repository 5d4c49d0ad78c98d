# want: 5:1: Unsupported argument
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
size      = "10GiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
