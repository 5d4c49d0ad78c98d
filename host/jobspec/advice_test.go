package jobspec

import (
	"errors"
	"strconv"
	"strings"
	"testing"
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
	job, err := Parse([]byte(src), "mp.hcl")
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
	job, err := Parse([]byte(src), "vj.hcl")
	if err != nil {
		t.Fatal(err)
	}
	w := Warnings(job)
	if len(w) != 1 || !strings.Contains(w[0], `Nomad refuses this job ("no task supports CSI")`) {
		t.Fatalf("warnings %q, want one saying Nomad refuses the raw_exec volume_mount", w)
	}
}

// CheckCommands: a command that cannot start here is a warning, a bare
// name a note saying which binary it runs; interpolated, relative and exec
// commands are left to the launch.
func TestCheckCommands(t *testing.T) {
	src := `job "c" {
  group "g" {
    task "missing" {
      driver = "raw_exec"
      config { command = "/nonexistent/bin/x" }
    }
    task "bare" {
      driver = "go_plugin"
      config { command = "greeter" }
    }
    task "abs" {
      driver = "raw_exec"
      config { command = "/bin/sh" }
    }
    task "later" {
      driver = "raw_exec"
      config { command = "${NOMAD_TASK_DIR}/x" }
    }
    task "rel" {
      driver = "raw_exec"
      config { command = "local/x" }
    }
    task "inside" {
      driver = "exec"
      config { command = "/nonexistent/in/root" }
    }
  }
}`
	job, err := Parse([]byte(src), "c.hcl")
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	resolve := func(c string) (string, error) {
		asked = append(asked, c)
		switch c {
		case "greeter":
			return "/somewhere/bin/greeter", nil
		case "/bin/sh":
			return c, nil
		}
		return "", errors.New("command " + strconv.Quote(c) + ": no such file or directory")
	}
	warnings, notes := CheckCommands(job, resolve)
	if len(warnings) != 1 || !strings.Contains(warnings[0], `task "missing": command "/nonexistent/bin/x": no such file`) {
		t.Errorf("warnings %q", warnings)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `command "greeter" runs /somewhere/bin/greeter`) {
		t.Errorf("notes %q", notes)
	}
	if want := []string{"/nonexistent/bin/x", "greeter", "/bin/sh"}; strings.Join(asked, ",") != strings.Join(want, ",") {
		t.Errorf("resolved %q, want %q", asked, want)
	}
}
