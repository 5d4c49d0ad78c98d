# A volume for examples/volume-job.hcl, created through the demo's mockcsi
# plugin (make run):
#
#   pluginhost volume create examples/volumes/data.hcl
#
# The same file works with `nomad volume create`.
id        = "data"
name      = "data"
type      = "csi"
plugin_id = "mockcsi"

capacity_min = "10MiB"
capacity_max = "1GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
