package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/host/config"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/internal/mountinfo"
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
	w := JobWarnings(job)
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
	w := JobWarnings(job)
	if len(w) != 1 || !strings.Contains(w[0], `Nomad refuses this job ("no task supports CSI")`) {
		t.Fatalf("warnings %q, want one saying Nomad refuses the raw_exec volume_mount", w)
	}
}

// TestRunJobChecksHost: the agent refuses, before recording anything, a job
// whose task would run as a user this machine lacks or the configuration
// denies, naming the task and the field.
func TestRunJobChecksHost(t *testing.T) {
	dir, err := os.MkdirTemp("", "phhc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mountinfo.DetachUnder(dir); err != nil {
			t.Error(err)
		}
		_ = os.RemoveAll(dir)
	})
	cfg := config.Dev()
	cfg.DataDir = filepath.Join(dir, "d")
	cfg.Addr = "unix://" + filepath.Join(dir, "api.sock")
	cfg.Containment.DeniedHostUIDs, _ = jobspec.ParseIDRanges("0-4294967294")
	a, err := NewAgent(cfg, Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	for _, tc := range []struct{ user, want string }{
		{`user = "no-such-user-pluginhost"`, `Unknown user: job "hc" group "g" task "t": user "no-such-user-pluginhost" does not exist on this host`},
		// No user: the agent's own, whose uid is denied.
		{``, `User not allowed: job "hc" group "g" task "t": no user given, so the agent's user`},
	} {
		job, err := jobspec.Parse([]byte(`job "hc" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      `+tc.user+`
      config { command = "/bin/sleep" }
    }
  }
}`), "hc.hcl")
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.RunJob(context.Background(), job)
		var ve *jobspec.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "TaskGroups[0].Tasks[0].User: "+tc.want) {
			t.Fatalf("RunJob = %v, want %q", err, tc.want)
		}
	}
}
