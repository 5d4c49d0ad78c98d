# want: 6:1: Conflicting clone_id
id = "v1"
type      = "csi"
plugin_id = "mockcsi"
snapshot_id = "snap-1"
clone_id    = "vol-2"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
