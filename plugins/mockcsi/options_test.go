package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultsNeedNoFlags(t *testing.T) {
	o, err := parseOptions(nil, env(map[string]string{"CSI_ENDPOINT": "unix:///tmp/x.sock"}), io.Discard)
	if err != nil {
		t.Fatalf("parseOptions: %v", err)
	}
	host, _ := os.Hostname()
	if o.DriverName != defaultDriverName || o.NodeID != host || o.Endpoint != "unix:///tmp/x.sock" ||
		o.Capacity != defaultCapacity || o.MountMethod != mountAuto || o.Faults.ExitAtStart != nil {
		t.Fatalf("defaults = %+v", o)
	}
	if err := validateDriverName(o.DriverName); err != nil {
		t.Fatalf("default driver name: %v", err)
	}
	if want := filepath.Join(os.TempDir(), "mockcsi-"); !strings.HasPrefix(o.StateDir, want) {
		t.Fatalf("state dir = %s, want prefix %s", o.StateDir, want)
	}
}

func TestStateDirDefaultOrder(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"NOMAD_TASK_DIR": "/t", "XDG_STATE_HOME": "/x"}, "/t/mockcsi"},
		{map[string]string{"XDG_STATE_HOME": "/x"}, "/x/mockcsi"},
	} {
		if got := defaultStateDir(env(tc.env)); got != tc.want {
			t.Errorf("defaultStateDir(%v) = %s, want %s", tc.env, got, tc.want)
		}
	}
}

func TestFaultEnvAndFlags(t *testing.T) {
	e := env(map[string]string{
		envProbeFail: "1", envProbeDelay: "2s", envNotReadyFor: "3s",
		envLatency: "4ms", envCrashAfter: "5", envExitAtStart: "6",
	})
	o, err := parseOptions(nil, e, io.Discard)
	if err != nil {
		t.Fatalf("parseOptions: %v", err)
	}
	f := o.Faults
	if !f.ProbeFail || f.ProbeDelay != 2*time.Second || f.NotReadyFor != 3*time.Second ||
		f.Latency != 4*time.Millisecond || f.CrashAfter != 5 || f.ExitAtStart == nil || *f.ExitAtStart != 6 {
		t.Fatalf("faults from env = %+v", f)
	}
	// Flags win over the environment.
	o, err = parseOptions([]string{"--latency=1s", "--crash-after=0", "--exit-at-start=9", "--probe-fail=false"}, e, io.Discard)
	if err != nil {
		t.Fatalf("parseOptions: %v", err)
	}
	if o.Faults.Latency != time.Second || o.Faults.CrashAfter != 0 || *o.Faults.ExitAtStart != 9 || o.Faults.ProbeFail {
		t.Fatalf("flags did not override env: %+v", o.Faults)
	}
	o, err = parseOptions([]string{"--exit-at-start=0"}, env(nil), io.Discard)
	if err != nil || o.Faults.ExitAtStart == nil || *o.Faults.ExitAtStart != 0 {
		t.Fatalf("--exit-at-start=0: %+v, %v", o.Faults, err)
	}
}

func TestFailAndDelayFromEnvAndFlag(t *testing.T) {
	e := env(map[string]string{envFail: "CreateVolume:3:UNAVAILABLE"})
	o, err := parseOptions(nil, e, io.Discard)
	if err != nil {
		t.Fatalf("parseOptions: %v", err)
	}
	if len(o.Faults.Fail) != 1 || o.Faults.Fail[0] != (failRule{"CreateVolume", 3, codes.Unavailable}) {
		t.Fatalf("rules from env = %v", o.Faults.Fail)
	}
	o, err = parseOptions([]string{"--fail=DeleteVolume:*:INTERNAL"}, e, io.Discard)
	if err != nil {
		t.Fatalf("parseOptions: %v", err)
	}
	if len(o.Faults.Fail) != 1 || o.Faults.Fail[0] != (failRule{"DeleteVolume", -1, codes.Internal}) {
		t.Fatalf("--fail did not override env: %v", o.Faults.Fail)
	}
	o, err = parseOptions([]string{"--delay=DeleteVolume:1s"}, env(map[string]string{envDelay: "CreateVolume:2s"}), io.Discard)
	if err != nil {
		t.Fatalf("parseOptions: %v", err)
	}
	if len(o.Faults.Delay) != 1 || o.Faults.Delay["DeleteVolume"] != time.Second {
		t.Fatalf("--delay did not override env: %v", o.Faults.Delay)
	}
	_, err = parseOptions(nil, env(map[string]string{envDelay: "CreateVolume:soon"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), envDelay) {
		t.Fatalf("bad %s: error %v does not name it", envDelay, err)
	}
	// The error names the setting that holds the bad value.
	_, err = parseOptions(nil, env(map[string]string{envFail: "CreateVolume:x:UNAVAILABLE"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), envFail) {
		t.Fatalf("bad %s: error %v does not name it", envFail, err)
	}
	_, err = parseOptions([]string{"--fail=Nope:1:INTERNAL"}, env(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--fail") {
		t.Fatalf("bad --fail: error %v does not name it", err)
	}
}

func TestBadInputIsAnError(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"bad duration env": {env: map[string]string{envLatency: "soon"}},
		"negative delay":   {env: map[string]string{envProbeDelay: "-1s"}},
		"bad int env":      {env: map[string]string{envCrashAfter: "many"}},
		"bad bool env":     {env: map[string]string{envProbeFail: "maybe"}},
		"bad fail env":     {env: map[string]string{envFail: "CreateVolume:1"}},
		"bad delay flag":   {args: []string{"--delay=CreateVolume"}},
		"bad capacity":     {args: []string{"--capacity=lots"}},
		"zero capacity":    {args: []string{"--capacity=0"}},
		"negative crash":   {args: []string{"--crash-after=-1"}},
		"negative limit":   {args: []string{"--max-volumes-per-node=-1"}},
		"unknown flag":     {args: []string{"--nope"}},
		"stray argument":   {args: []string{"serve"}},
	} {
		if _, err := parseOptions(tc.args, env(tc.env), io.Discard); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "4Ki": 4096, "100Gi": 100 << 30, "2M": 2e6, "1Ti": 1 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Gi", "-1", "1.5Gi", "99999999999Ti"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): no error", in)
		}
	}
}

func TestDriverNameRule(t *testing.T) {
	for _, ok := range []string{"mockcsi.pluginhost.dev", "a_b-c.d", "ab"} {
		if err := validateDriverName(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a", "1abc", "abc.", "a/b", strings.Repeat("a", 64)} {
		if err := validateDriverName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
