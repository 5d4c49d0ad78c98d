# want: 6:1: Unexpected snapshot_id
# want: 7:1: Conflicting clone_id
# want: 7:1: Unexpected clone_id
id          = "v1"
external_id = "vol-0abc"
snapshot_id = "snap-1"
clone_id    = "vol-2"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
