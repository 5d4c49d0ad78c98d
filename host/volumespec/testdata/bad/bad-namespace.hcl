# want: 3:13: Unsupported namespace
id        = "v1"
namespace = "prod"
type      = "csi"
plugin_id = "mockcsi"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
