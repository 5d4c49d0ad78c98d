# Every key a volume file may hold, in both forms where there are two.
id        = "pg-data"
namespace = "default"
name      = "Postgres data"
type      = "csi"
plugin_id = "mock.csi"

snapshot_id  = "snap-42"
capacity_min = "10GiB"
capacity_max = "1.5T"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "multi-node-reader-only"
  attachment_mode = "block-device"
}

mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime", "nodev"]
}

topology_request {
  required {
    topology { segments = { "rack" = "R1", "zone" = "us-east-1a" } }
  }
  required {
    topology {
      segments {
        rack = "R2"
      }
    }
  }
  preferred {
    topology { segments = { rack = "R1" } }
  }
}

secrets {
  token = "xyzzy"
}

parameters = { "skuname" = "Premium_LRS", replicas = 3 }

context {
  endpoint = "http://192.168.1.101:9425"
}
