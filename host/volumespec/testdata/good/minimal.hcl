id        = "scratch"
type      = "csi"
plugin_id = "mockcsi"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "block-device"
}
