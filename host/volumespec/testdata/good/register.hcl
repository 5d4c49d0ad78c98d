# A volume that exists already, as `volume register` takes it.
id          = "legacy-1"
type        = "csi"
plugin_id   = "mockcsi"
external_id = "vol-0abc123"

capacity_min = 1073741824

capability {
  access_mode     = "multi-node-multi-writer"
  attachment_mode = "file-system"
}

context {
  endpoint = "http://192.168.1.101:9425"
}
