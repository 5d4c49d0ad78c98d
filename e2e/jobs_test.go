package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/internal/testbin"
)

// taskSpec is one task of a generated job file.
type taskSpec struct {
	name   string
	driver string // "" = raw_exec
	cmd    string
	args   []string
	marker string
	// extra is HCL appended inside the task block.
	extra string
	env   map[string]string
}

// shTask is a raw_exec task running script under /bin/sh.
func shTask(name, marker, script string) taskSpec {
	return taskSpec{name: name, cmd: "/bin/sh", args: []string{"-c", script}, marker: marker}
}

// mockcsiGoPlugin is mockcsi launched through go-plugin.
func mockcsiGoPlugin(t testing.TB, name, marker string) taskSpec {
	return taskSpec{name: name, driver: "go_plugin", cmd: testbin.MustPath(t, "mockcsi"),
		args: []string{"--node-id=e2e"}, marker: marker}
}

// mockcsiRawExec is mockcsi as a standalone CSI driver on a socket in its
// task dir (short enough under the e2e root).
func mockcsiRawExec(t testing.TB, name, marker string) taskSpec {
	return taskSpec{name: name, cmd: testbin.MustPath(t, "mockcsi"), marker: marker,
		args: []string{"--endpoint=unix://${NOMAD_TASK_DIR}/csi.sock", "--node-id=e2e"}}
}

// logLoop writes a line every 5 ms, forever.
const logLoop = `i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.005; done`

// sleeper runs quietly, forever, as one process.
const sleeper = `echo started; exec sleep 1000000`

// jobHCL renders a one-group service job. group is HCL inside the group
// block (restart policy, count).
func jobHCL(id, group string, tasks ...taskSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %q {\n  type = \"service\"\n  group \"g\" {\n%s\n", id, group)
	for _, t := range tasks {
		drv := t.driver
		if drv == "" {
			drv = "raw_exec"
		}
		fmt.Fprintf(&b, "    task %q {\n      driver = %q\n      config {\n        command = %q\n", t.name, drv, t.cmd)
		if len(t.args) > 0 {
			quoted := make([]string, len(t.args))
			for i, a := range t.args {
				quoted[i] = hclString(a)
			}
			fmt.Fprintf(&b, "        args = [%s]\n", strings.Join(quoted, ", "))
		}
		b.WriteString("      }\n      env {\n")
		if t.marker != "" {
			fmt.Fprintf(&b, "        E2E_MARK = %q\n", t.marker)
		}
		for k, v := range t.env {
			fmt.Fprintf(&b, "        %s = %s\n", k, hclString(v))
		}
		b.WriteString("      }\n")
		b.WriteString(t.extra)
		b.WriteString("\n    }\n")
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// hclString quotes s for HCL, keeping ${...} interpolations live.
func hclString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			// HCL reads \uNNNN, not Go's \x1b or \a.
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	// "%{" starts a template directive; "$${" (a literal) is not used.
	return strings.ReplaceAll(b.String(), "%{", "%%{")
}

// markerFor returns a marker unique to the env and task.
func (e *env) markerFor(task string) string {
	return filepath.Base(e.root) + "-" + task
}
