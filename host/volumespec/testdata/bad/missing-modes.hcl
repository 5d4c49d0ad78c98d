# want: 6:1: Missing access_mode
# want: 6:1: Missing attachment_mode
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
}
