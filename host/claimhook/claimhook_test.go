package claimhook

import (
	"slices"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

const volumeJob = `job "app" {
  group "g" {
    count = 2
    volume "data" {
      type            = "csi"
      source          = "db"
      per_alloc       = true
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      mount_options { fs_type = "ext4" }
    }
    volume "conf" {
      type            = "csi"
      source          = "shared"
      read_only       = true
      access_mode     = "multi-node-reader-only"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
      volume_mount {
        volume      = "data"
        destination = "local/data"
      }
    }
  }
}`

func parse(t *testing.T, src string) *jobspec.Job {
	t.Helper()
	j, err := jobspec.Parse([]byte(src), "app.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A group's claims, per allocation: per_alloc names the volume after the
// allocation's index, as Nomad does; the order is the aliases' (which the
// hook pairs with them); each carries the access, attachment, read-only
// and mount options of its volume block.
func TestClaimRequests(t *testing.T) {
	job := parse(t, volumeJob)
	g := job.TaskGroups[0]
	if got := VolumeAliases(g); !slices.Equal(got, []string{"conf", "data"}) {
		t.Fatalf("aliases %v", got)
	}
	reqs := ClaimRequests(job, g, "a1", 1)
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	conf, data := reqs[0], reqs[1]
	if conf.VolumeID != "shared" || !conf.ReadOnly || conf.AccessMode != "multi-node-reader-only" || conf.MountOptions != nil {
		t.Errorf("conf claim %+v", conf)
	}
	if data.VolumeID != "db[1]" || data.ReadOnly || data.AllocID != "a1" || data.JobID != "app" || data.TaskGroup != "g" ||
		data.MountOptions == nil || data.MountOptions.FSType != "ext4" {
		t.Errorf("data claim %+v", data)
	}
}

// VolumeIDs lists every volume the job's allocations claim (per_alloc
// once per index), and Exclusive says whether a volume allows one writer.
func TestVolumeIDsAndExclusive(t *testing.T) {
	job := parse(t, volumeJob)
	ids := VolumeIDs(job)
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"db[0]", "db[1]", "shared"}) {
		t.Errorf("VolumeIDs = %v", ids)
	}
	if !Exclusive(job) {
		t.Error("a single-node-writer volume written to is not exclusive")
	}
	job.TaskGroups[0].Volumes["data"].ReadOnly = true
	if Exclusive(job) {
		t.Error("read-only claims are exclusive")
	}
}
