package host

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
	w := JobWarnings(job)
	if len(w) != 1 || !strings.Contains(w[0], `group "g"`) || !strings.Contains(w[0], "max_parallel") {
		t.Fatalf("warnings %q, want one about group g's max_parallel", w)
	}
}
