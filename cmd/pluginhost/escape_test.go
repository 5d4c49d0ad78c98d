package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
)

// hostile is what a plugin or a task may answer with: a clipboard write
// (OSC 52), a disguised link (OSC 8), a screen clear and cursor move, a
// bell, a carriage return, a fake table row, a bidi override and a C1
// control.
const hostile = "x\x1b]52;c;cHduZWQ=\a\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\x1b[2J\x1b[H\r\nfake|row\u202e\u009b"

// rawControls reports the control bytes in out that are not newlines or
// tabs: none may reach the terminal.
func rawControls(out string) []byte {
	var bad []byte
	for _, r := range out {
		if r == '\n' || r == '\t' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' {
			bad = append(bad, byte(r))
		}
	}
	return bad
}

// Issue 26 §9: every string a plugin or task put into what the agent
// returns comes out of the CLI as text: plugin status (list and detail:
// name, version, node ID, topology) and alloc status (a task event's
// message, as a go_plugin handshake line puts it there; events prints
// through the same Ui). Before, each reached the terminal raw.
func TestPluginAndTaskStringsAreText(t *testing.T) {
	fa, addr := startAgent(t)
	ctx := testCtx(t)
	id := "eeeeeeee-0000-4000-8000-000000000001"
	fa.mu.Lock()
	fa.plugins["evil"] = &api.CSIPlugin{
		ID: "evil", Provider: hostile, Version: hostile, NodesHealthy: 1, NodesExpected: 1, ActiveNode: id,
		Nodes: map[string]*api.CSIInfo{id: {AllocID: id, PluginID: "evil", Healthy: true, HealthDescription: hostile,
			UpdateTime: t0, NodeInfo: &api.CSINodeInfo{ID: hostile, AccessibleTopology: map[string]string{hostile: hostile}}}},
	}
	fa.mu.Unlock()
	runCLI(t, ctx, addr, "job", "run", "-detach", exampleJob)
	alloc := "00000001-0000-4000-8000-000000000000"
	fa.mu.Lock()
	fa.taskEventLocked(fa.allocs[alloc], "sleep", &api.TaskEvent{Type: "Driver Failure", DisplayMessage: hostile})
	fa.mu.Unlock()

	for _, args := range [][]string{
		{"plugin", "status"}, {"plugin", "status", "evil"}, {"alloc", "status", "00000001"},
	} {
		r := runCLI(t, ctx, addr, args...)
		out := r.stdout + r.stderr
		if bad := rawControls(out); len(bad) > 0 {
			t.Errorf("%v printed raw control characters %q:\n%s", args, bad, out)
		}
		if !strings.Contains(out, `\x1b]52;c;cHduZWQ=\a`) {
			t.Errorf("%v does not show the escape sequence as text:\n%s", args, out)
		}
		if args[0] == "plugin" && strings.Contains(out, "\nfake") {
			t.Errorf("%v let a value add a line:\n%s", args, out)
		}
	}
}

// alloc logs -escape keeps colours, newlines, tabs and carriage returns,
// and shows every other control sequence as text, also when a sequence
// is split across two reads; without it the log is byte for byte.
func TestAllocLogsEscape(t *testing.T) {
	log := "\x1b[1;31mred\x1b[0m\tok\r\n" + hostile + "\n"
	var b bytes.Buffer
	e := &logEscaper{w: &b}
	// Byte by byte: every sequence is split.
	for i := 0; i < len(log); i++ {
		if _, err := e.Write([]byte{log[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if !strings.HasPrefix(got, "\x1b[1;31mred\x1b[0m\tok\r\n") {
		t.Errorf("colours, tab or CR lost: %q", got)
	}
	rest := strings.TrimPrefix(got, "\x1b[1;31mred\x1b[0m\tok\r\n")
	if strings.ContainsAny(rest, "\x1b\a\u202e\u009b") || !strings.Contains(rest, `\x1b]52;c;cHduZWQ=\a`) || !strings.Contains(rest, `\x1b[2J`) {
		t.Errorf("hostile sequences not escaped: %q", rest)
	}

	fa, addr := startAgent(t)
	ctx := testCtx(t)
	runCLI(t, ctx, addr, "job", "run", "-detach", exampleJob)
	fa.mu.Lock()
	fa.logs["00000001-0000-4000-8000-000000000000/sleep/stdout"] = log
	fa.mu.Unlock()
	if r := runCLI(t, ctx, addr, "alloc", "logs", "-escape", "00000001"); r.code != 0 || strings.Contains(r.stdout, "\x1b]") {
		t.Errorf("alloc logs -escape: %+v", r)
	}
	// Not a terminal: raw by default.
	if r := runCLI(t, ctx, addr, "alloc", "logs", "00000001"); r.code != 0 || r.stdout != log {
		t.Errorf("alloc logs to a pipe: %q", r.stdout)
	}
}
