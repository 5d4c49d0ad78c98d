package jobspec

import (
	"slices"
	"testing"
)

func TestInterpolate(t *testing.T) {
	vars := map[string]string{
		VarAllocID:             "a1",
		VarNodeName:            "n1",
		VarCSIEndpoint:         "unix:///x.sock",
		"NOMAD_META_team":      "storage",
		"VALUE_WITH_REFERENCE": "${NOMAD_ALLOC_ID}",
	}
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"${NOMAD_ALLOC_ID}", "a1"},
		{"--endpoint=${CSI_ENDPOINT}", "--endpoint=unix:///x.sock"},
		{"${node.unique.name}-${NOMAD_ALLOC_ID}-${NOMAD_META_team}", "n1-a1-storage"},
		{"${UNKNOWN} stays", "${UNKNOWN} stays"},
		{"unterminated ${NOMAD_ALLOC_ID", "unterminated ${NOMAD_ALLOC_ID"},
		{"$NOMAD_ALLOC_ID is for the shell", "$NOMAD_ALLOC_ID is for the shell"},
		{"${}", "${}"},
		// Values are not rescanned: no second expansion.
		{"${VALUE_WITH_REFERENCE}", "${NOMAD_ALLOC_ID}"},
		{"$${NOMAD_ALLOC_ID}", "$a1"},
		{"é${NOMAD_ALLOC_ID}é", "éa1é"},
	} {
		if got := Interpolate(tc.in, vars); got != tc.want {
			t.Errorf("Interpolate(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Interpolate("${NOMAD_ALLOC_ID}", nil); got != "${NOMAD_ALLOC_ID}" {
		t.Errorf("nil vars: got %q", got)
	}
}

func TestRuntimeVariables(t *testing.T) {
	names := RuntimeVariables()
	if !slices.IsSorted(names) {
		t.Errorf("not sorted: %q", names)
	}
	for _, n := range []string{VarAllocID, VarAllocDir, VarTaskDir, VarSecretsDir, VarAllocIndex, VarAllocName,
		VarJobID, VarJobName, VarGroupName, VarTaskName, VarCSIEndpoint, VarNodeName, VarNodeID, VarNodeDC} {
		if !slices.Contains(names, n) || !IsRuntimeVariable(n) {
			t.Errorf("%s missing", n)
		}
	}
	for _, n := range []string{"NOMAD_META_", "HOME", "node", "NOMAD_ALLOC"} {
		if IsRuntimeVariable(n) {
			t.Errorf("IsRuntimeVariable(%q) = true", n)
		}
	}
	if !IsRuntimeVariable("NOMAD_META_x") {
		t.Error("NOMAD_META_x should be known")
	}
}

// Every runtime variable must survive parsing as its own text, so that
// Interpolate later finds it; this ties the parse-time scope to the runtime
// names.
func TestEveryRuntimeVariableRoundTrips(t *testing.T) {
	names := append(RuntimeVariables(), "NOMAD_META_owner")
	vars := map[string]string{}
	var args string
	for i, n := range names {
		vars[n] = "v" + n
		if i > 0 {
			args += ", "
		}
		args += `"${` + n + `}"`
	}
	src := `job "x" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
        args    = [` + args + `]
      }
    }
  }
}`
	job, err := Parse([]byte(src), "x.hcl")
	if err != nil {
		t.Fatal(err)
	}
	got := job.TaskGroups[0].Tasks[0].Config.Args
	for i, n := range names {
		if got[i] != "${"+n+"}" {
			t.Errorf("arg %d = %q, want %q", i, got[i], "${"+n+"}")
		}
		if v := Interpolate(got[i], vars); v != "v"+n {
			t.Errorf("Interpolate(%q) = %q", got[i], v)
		}
	}
}

func TestSignalByName(t *testing.T) {
	if s, ok := SignalByName("SIGTERM"); !ok || s.String() != "terminated" {
		t.Errorf("SIGTERM = %v %v", s, ok)
	}
	if _, ok := SignalByName("SIGSTOP"); ok {
		t.Error("SIGSTOP cannot end a process and must be refused")
	}
	if _, ok := SignalByName(DefaultKillSignal); !ok {
		t.Error("the default kill signal must be valid")
	}
	names := KillSignalNames()
	if !slices.IsSorted(names) {
		t.Errorf("KillSignalNames not sorted: %q", names)
	}
	for _, n := range names {
		if _, ok := SignalByName(n); !ok {
			t.Errorf("listed signal %s is not accepted", n)
		}
	}
}
