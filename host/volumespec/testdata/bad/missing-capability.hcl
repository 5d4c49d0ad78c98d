# want: 1:1: Missing capability
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
