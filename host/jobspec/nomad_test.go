package jobspec

import (
	"fmt"
	"strings"
	"testing"
)

// TestNomadWarnings: a raw_exec (or go_plugin) task with volume_mount is
// valid here but refused by Nomad, and job validate and job run say so.
func TestNomadWarnings(t *testing.T) {
	src := func(drivers ...string) string {
		var b strings.Builder
		b.WriteString(`job "vj" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
`)
		for i, d := range drivers {
			fmt.Fprintf(&b, `    task "t%d" {
      driver = %q
      config { command = "/bin/true" }
      volume_mount {
        volume      = "data"
        destination = "/srv/data"
      }
    }
`, i, d)
		}
		b.WriteString("  }\n}\n")
		return b.String()
	}
	for _, tc := range []struct {
		drivers []string
		want    []string
	}{
		{[]string{"raw_exec"}, []string{`group "g" task "t0": Nomad refuses this job ("no task supports CSI"): its raw_exec driver cannot mount volumes`}},
		{[]string{"go_plugin"}, []string{`task "t0": Nomad refuses this job ("no task supports CSI"): its raw_exec driver`}},
		{[]string{"exec", "raw_exec"}, []string{`task "t1": Nomad refuses this job ("task driver \"raw_exec\" for \"t1\" does not support CSI")`}},
		{[]string{"exec"}, nil},
	} {
		job, err := Parse([]byte(src(tc.drivers...)), "vj.hcl")
		if err != nil {
			t.Fatal(err)
		}
		got := NomadWarnings(job)
		if len(got) != len(tc.want) {
			t.Fatalf("%v: warnings %q, want %d", tc.drivers, got, len(tc.want))
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) || !strings.Contains(got[i], `use driver = "exec"`) {
				t.Errorf("%v: warning %q, want %q", tc.drivers, got[i], tc.want[i])
			}
		}
	}
}
