# Every block and key the parser accepts, with non-default values.
job "full" {
  type        = "service"
  datacenters = ["dc1", "dc2*"]

  meta {
    team = "storage"
  }

  group "plugins" {
    count = 2

    restart {
      attempts = 5
      interval = "10m"
      delay    = "20s"
      mode     = "delay"
    }

    meta {
      tier = "gold"
    }

    volume "data" {
      type            = "csi"
      source          = "vol-data"
      read_only       = true
      access_mode     = "multi-node-reader-only"
      attachment_mode = "file-system"
      per_alloc       = true

      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime", "nodev"]
      }
    }

    task "node" {
      driver       = "go_plugin"
      kill_timeout = "20s"
      kill_signal  = "SIGTERM"

      config {
        command  = "mockcsi"
        args     = ["--node-id=${node.unique.name}", "--state-dir=${NOMAD_TASK_DIR}/state"]
        work_dir = "${NOMAD_ALLOC_DIR}"
        checksum = "sha256:ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789"
      }

      env {
        OWNER   = "${NOMAD_META_team}"
        INDEX   = "${NOMAD_ALLOC_INDEX}"
        LITERAL = "$${NOMAD_ALLOC_ID}"
        NUMBER  = 42
      }

      meta {
        role = "node"
      }

      resources {
        cpu    = 250
        memory = 128
      }

      restart {
        attempts = 1
      }

      logs {
        max_files     = 4
        max_file_size = 2
        disabled      = true
      }

      csi_plugin {
        id                     = "mock.csi"
        type                   = "node"
        mount_dir              = "/csi-node"
        stage_publish_base_dir = "/local/csi"
        health_timeout         = "1m"
      }

      volume_mount {
        volume      = "data"
        destination = "/srv/data"
        read_only   = true
      }
    }

    task "controller" {
      driver = "raw_exec"

      config {
        command = "/usr/bin/mockcsi"
        args    = ["--endpoint=${CSI_ENDPOINT}"]
      }

      csi_plugin {
        id   = "mock.csi"
        type = "controller"
      }
    }

    task "worker" {
      driver = "exec"
      user   = "www-data"

      config {
        command  = "/usr/bin/worker"
        work_dir = "/srv"
        pid_mode = "host"
        cap_drop = ["all"]
        cap_add  = ["net_bind_service", "CAP_CHOWN"]
      }

      resources {
        cpu        = 200
        memory     = 64
        memory_max = 256
      }
    }
  }
}
