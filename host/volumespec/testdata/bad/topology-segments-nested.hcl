# want: 13:9: Unexpected "rack" block
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
topology_request {
  required {
    topology {
      segments {
        rack {
        }
      }
    }
  }
}
