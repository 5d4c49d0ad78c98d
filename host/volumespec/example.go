package volumespec

// ExampleHCL is the volume file `volume init` writes: every key, explained,
// valid as it stands for `volume create` with the mockcsi plugin. Keys
// that only fit one operation or one plugin are commented out.
const ExampleHCL = `# A CSI volume for "pluginhost volume create" or "volume register".
# The format is Nomad's volume specification: this file works with
# "nomad volume create" too.

# The ID jobs use in a volume block's "source". Letters, digits, '.', '_'
# and '-', at most 128.
id = "myvol"

# The name the plugin creates the volume under (defaults to the id).
# Creating the same name again returns the existing volume.
name = "myvol"

type      = "csi"
plugin_id = "mockcsi"

# For "volume register" only: the storage provider's ID of a volume that
# exists already. "volume create" refuses it.
# external_id = "vol-0123456789abcdef"

# For "volume create" only, at most one: the new volume's content source.
# snapshot_id = "snap-12345"
# clone_id    = "vol-abcdef"

# The size the plugin should give the volume, between the two: a number of
# bytes, or with a unit: kB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB
# (powers of 1024).
capacity_min = "1GiB"
capacity_max = "2GiB"

# At least one: each way a job may use the volume. A job's volume block
# must ask for one of these exactly.
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}

# For file-system attachments: how the plugin formats and mounts the volume.
# A job's own mount_options override these.
mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime"]
}

# Where the volume must be (required) or should be (preferred) accessible
# from, for plugins with topology. Segment keys and values are the plugin's.
# topology_request {
#   required {
#     topology { segments = { rack = "R1", zone = "us-east-1a" } }
#   }
#   preferred {
#     topology { segments = { rack = "R1" } }
#   }
# }

# Passed to the plugin with every call and never shown.
# secrets {
#   token = "xyzzy"
# }

# Passed to the plugin's CreateVolume.
# parameters {
#   skuname = "Premium_LRS"
# }

# For "volume register": what the plugin's CreateVolume returned, passed
# to every publish and stage call. "volume create" fills it in.
# context {
#   endpoint = "http://192.168.1.101:9425"
# }
`

// ExampleJSON is ExampleHCL in JSON, without the comments JSON cannot hold.
const ExampleJSON = `{
  "id": "myvol",
  "name": "myvol",
  "type": "csi",
  "plugin_id": "mockcsi",
  "capacity_min": "1GiB",
  "capacity_max": "2GiB",
  "capability": [
    {
      "access_mode": "single-node-writer",
      "attachment_mode": "file-system"
    },
    {
      "access_mode": "single-node-reader-only",
      "attachment_mode": "file-system"
    }
  ],
  "mount_options": {
    "fs_type": "ext4",
    "mount_flags": ["noatime"]
  }
}
`
