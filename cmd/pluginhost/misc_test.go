package main

import (
	"strings"
	"testing"
)

func TestAgentFlags(t *testing.T) {
	ctx := testCtx(t)
	if r := runCLI(t, ctx, "", "agent"); r.code != 1 || !strings.Contains(r.stderr, "-config FILE or -dev") {
		t.Errorf("agent without config: %+v", r)
	}
	if r := runCLI(t, ctx, "", "agent", "extra"); r.code != 1 || !strings.Contains(r.stderr, "no arguments") {
		t.Errorf("agent with args: %+v", r)
	}
}

func TestVersionAndHelp(t *testing.T) {
	ctx := testCtx(t)
	if r := runCLI(t, ctx, "", "version"); r.code != 0 || r.stdout != "pluginhost v"+version+"\n" {
		t.Errorf("version: %+v", r)
	}
	r := runCLI(t, ctx, "", "job")
	for _, sub := range []string{"run", "stop", "status", "validate"} {
		if !strings.Contains(r.stdout+r.stderr, sub) {
			t.Errorf("job help lacks %q: %+v", sub, r)
		}
	}
	// logmon is hidden from the command list.
	r = runCLI(t, ctx, "", "-h")
	if strings.Contains(r.stdout+r.stderr, "logmon") || !strings.Contains(r.stdout+r.stderr, "plugin") {
		t.Errorf("top-level help: %+v", r)
	}
}

func TestAddressPrecedence(t *testing.T) {
	_, addr := startAgent(t)
	ctx := testCtx(t)
	// -address wins over a wrong PLUGINHOST_ADDR.
	if r := runCLI(t, ctx, "unix:///nonexistent/x.sock", "job", "status", "-address", addr); r.code != 0 {
		t.Errorf("-address: %+v", r)
	}
	// A bad address is refused with the reason.
	if r := runCLI(t, ctx, "10.1.2.3:4646", "job", "status"); r.code != 1 || !strings.Contains(r.stderr, "loopback") {
		t.Errorf("non-loopback address: %+v", r)
	}
}

func TestUnknownCommand(t *testing.T) {
	cmds := commands(&Meta{})
	for args, want := range map[string]string{
		"foo":                        "foo",
		"job foo":                    "job foo",
		"job status web":             "",
		"job":                        "",
		"volume snapshot list -json": "",
		"volume snapshot bogus":      "volume snapshot bogus",
		"-version":                   "",
		"alloc logs abc web":         "",
	} {
		if got := unknownCommand(cmds, strings.Fields(args)); got != want {
			t.Errorf("unknownCommand(%q) = %q, want %q", args, got, want)
		}
	}
}
