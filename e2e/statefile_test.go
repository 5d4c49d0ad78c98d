package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// refusedStart launches the agent and expects it to exit with an error
// whose output mentions every one of want.
func (e *env) refusedStart(want ...string) {
	e.t.Helper()
	a, started := e.launch()
	select {
	case <-a.exited:
	case <-started:
		e.t.Fatalf("the agent started:\n%s", a.output())
	case <-time.After(startTimeout):
		e.t.Fatalf("the agent neither started nor exited:\n%s", a.output())
	}
	if a.exitErr == nil {
		e.t.Fatalf("the agent exited 0:\n%s", a.output())
	}
	for _, w := range want {
		if !strings.Contains(a.output(), w) {
			e.t.Errorf("the agent's refusal does not mention %q:\n%s", w, a.output())
		}
	}
}

// TestEmptyStateFileIsRefused: a 0-byte state.db in a data dir with
// allocations used to be taken as new, and the agent started empty with the
// tasks running unmanaged. It must refuse, name the file, change nothing,
// and leave the tasks alone.
func TestEmptyStateFileIsRefused(t *testing.T) {
	e := newEnv(t, "")
	marker := e.markerFor("t")
	a := e.start()
	a.runJob("keep", jobHCL("keep", restartPolicy, shTask("t", marker, sleeper)))
	a.jobConverged("keep", 0, 1, 30*time.Second)
	pids := topMarked(marker)
	a.kill()

	path := filepath.Join(e.dataDir, "state.db")
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	e.refusedStart(path, "is empty (0 bytes)", "allocation directories")
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Fatalf("the refused state file changed: %v %v", st, err)
	}
	if got := topMarked(marker); len(got) != 1 || got[0] != pids[0] {
		t.Fatalf("the task was touched: before %v, after %v", pids, got)
	}
}

// TestDamagedRecordLeavesFileUntouched: a state file with a record that
// does not decode is refused before anything is written to it (it used to
// be modified by the open's own commit first).
func TestDamagedRecordLeavesFileUntouched(t *testing.T) {
	e := newEnv(t, "")
	a := e.start()
	ids := a.runJob("dmg", jobHCL("dmg", restartPolicy, shTask("t", e.markerFor("t"), sleeper)))
	a.jobConverged("dmg", 0, 1, 30*time.Second)
	a.kill()

	path := filepath.Join(e.dataDir, "state.db")
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("allocs")).Bucket([]byte(ids[0])).Put([]byte("alloc"), []byte(`{"ID": 7`))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e.refusedStart(path, "damaged record", ids[0])
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the refused state file was modified")
	}
}
