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
	// Every uid is denied: the dynamic range must be off.
	cfg.Containment.DynamicUserMin, cfg.Containment.DynamicUserMax = -1, -1
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
