package state

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestCrashHelperProcess is not a test: TestKill9KeepsAcknowledgedWrites
// runs the test binary again with this as the only test, writing until it is
// killed, and printing the index of every write once it has returned.
func TestCrashHelperProcess(t *testing.T) {
	path := os.Getenv("STATE_CRASH_HELPER_PATH")
	if path == "" {
		t.Skip("helper process only")
	}
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("helper Open: %v", err)
	}
	if err := db.PutAlloc(testAlloc("crash")); err != nil {
		t.Fatalf("helper PutAlloc: %v", err)
	}
	for i := range 1_000_000 { // bounded in case the parent never kills us
		if err := db.PutPlugins(testPlugin(i)); err != nil {
			t.Fatalf("helper PutPlugins: %v", err)
		}
		if err := db.AppendTaskEvent("crash", "t", &TaskEvent{Type: "Tick", Message: strconv.Itoa(i)}); err != nil {
			t.Fatalf("helper AppendTaskEvent: %v", err)
		}
		fmt.Fprintln(os.Stdout, i)
	}
}

func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	path := statePath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STATE_CRASH_HELPER_PATH="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	const killAfter = 150
	acked := -1
	sc := bufio.NewScanner(stdout)
	for acked < killAfter && sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil {
			continue // the test framework's own output
		}
		acked = n
	}
	if acked < killAfter {
		t.Fatalf("helper stopped after %d writes: %v", acked, sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	db := openTest(t, path, Options{})
	plugins := mustPlugins(t, db)
	for i := 0; i <= acked; i++ {
		p := testPlugin(i)
		if _, ok := plugins[p.Type+"/"+p.Name+"/"+p.AllocID]; !ok {
			t.Fatalf("acknowledged write %d lost after kill -9 (%d of %d found)", i, len(plugins), acked+1)
		}
	}
	evs, err := db.taskEvents("crash", "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != maxTaskEvents {
		t.Fatalf("%d events after kill -9, want %d", len(evs), maxTaskEvents)
	}
	last, _ := strconv.Atoi(evs[len(evs)-1].Message)
	if last < acked {
		t.Fatalf("last event %d, but %d was acknowledged", last, acked)
	}
}
