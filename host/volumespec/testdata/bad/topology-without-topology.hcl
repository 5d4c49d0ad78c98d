# want: 11:5: Unsupported argument
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
topology_request {
  preferred {
    segments = { rack = "R1" }
  }
}
