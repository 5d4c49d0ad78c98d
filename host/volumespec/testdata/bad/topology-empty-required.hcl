# want: 10:3: Missing topology
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
topology_request {
  required {}
}
