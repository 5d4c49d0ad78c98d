package jobs

import (
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// TestJobWarnings: a submission is told what pluginhost runs differently
// from Nomad (a max_parallel it does not follow), and nothing otherwise.
func TestJobWarnings(t *testing.T) {
	src := `job "mp" {
  group "g" {
    count = 3
    update { max_parallel = 1 }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
  group "h" {
    count = 1
    update { max_parallel = 1 }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
    }
  }
}`
	job, err := jobspec.Parse([]byte(src), "mp.hcl")
	if err != nil {
		t.Fatal(err)
	}
	w := Warnings(job)
	if len(w) != 1 || !strings.Contains(w[0], `group "g"`) || !strings.Contains(w[0], "max_parallel") {
		t.Fatalf("warnings %q, want one about group g's max_parallel", w)
	}
}

// TestJobWarningsNomadRefuses: a raw_exec task with a volume_mount runs
// here, and `job run` says that Nomad refuses the job.
func TestJobWarningsNomadRefuses(t *testing.T) {
	src := `job "vj" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/sleep" }
      volume_mount {
        volume      = "data"
        destination = "/srv/data"
      }
    }
  }
}`
	job, err := jobspec.Parse([]byte(src), "vj.hcl")
	if err != nil {
		t.Fatal(err)
	}
	w := Warnings(job)
	if len(w) != 1 || !strings.Contains(w[0], `Nomad refuses this job ("no task supports CSI")`) {
		t.Fatalf("warnings %q, want one saying Nomad refuses the raw_exec volume_mount", w)
	}
}
