# want: 6:21: Invalid access_mode
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "read-write-many"
  attachment_mode = "file-system"
}
