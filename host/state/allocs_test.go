package state

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/driver"
	"github.com/pluginhost/pluginhost/host/jobspec"
	"go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 11, 22, 3, 0, 0, 123456789, time.UTC)

func testJob() *jobspec.Job {
	return &jobspec.Job{
		ID: "csi-hostpath", Name: "csi-hostpath", Type: jobspec.JobTypeSystem, Datacenters: []string{"dc1"},
		Meta: map[string]string{"owner": "ops"},
		TaskGroups: []*jobspec.TaskGroup{{
			Name: "nodes", Count: 1,
			Restart: &jobspec.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: jobspec.RestartModeFail},
			Tasks: []*jobspec.Task{{
				Name: "plugin", Driver: jobspec.DriverGoPlugin,
				Config:      &jobspec.TaskConfig{Command: "/usr/bin/mockcsi", Args: []string{"-v"}, Checksum: "sha256:00"},
				Env:         map[string]string{"A": "b"},
				KillTimeout: 5 * time.Second,
				CSIPluginConfig: &jobspec.TaskCSIPluginConfig{
					ID: "hostpath", Type: jobspec.CSIPluginTypeMonolith, MountDir: "/csi", HealthTimeout: 30 * time.Second,
				},
			}},
		}},
		SourcePath: "/etc/pluginhost/jobs/csi.hcl",
	}
}

func testAlloc(id string) *Alloc {
	return &Alloc{
		ID: id, JobID: "csi-hostpath", TaskGroup: "nodes", Index: 0, Job: testJob(),
		DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusRunning,
		CreateTime: t0, ModifyTime: t0.Add(time.Second),
	}
}

func TestAllocsRoundTrip(t *testing.T) {
	path := statePath(t)
	db := openTest(t, path, Options{})

	want := []*AllocState{}
	for i := range 3 {
		a := testAlloc(fmt.Sprintf("alloc-%d", i))
		if err := db.PutAlloc(a); err != nil {
			t.Fatal(err)
		}
		as := &AllocState{Alloc: a, Tasks: map[string]*TaskRecord{}}
		if i == 2 {
			// An allocation whose tasks have not started has no task records.
			want = append(want, as)
			continue
		}
		state := &TaskState{State: TaskStateRunning, Restarts: 2, LastRestart: t0.Add(time.Minute), StartedAt: t0.Add(2 * time.Minute)}
		handle := &TaskHandle{
			Driver: jobspec.DriverGoPlugin, Pid: 4242, StartTime: 987654, SocketPath: "/run/ph/" + a.ID + "/csi.sock",
			Reattach:  &driver.ReattachRecord{Protocol: "grpc", ProtocolVersion: 1, Network: "unix", Addr: "/tmp/plugin123", Pid: 4242},
			LogmonPid: 4240, LogmonStartTime: 987650,
		}
		ev := &TaskEvent{Type: "Started", Time: t0, Message: "task started", Details: map[string]string{"pid": "4242"}}
		if err := db.PutTaskState(a.ID, "plugin", state); err != nil {
			t.Fatal(err)
		}
		if err := db.PutTaskHandle(a.ID, "plugin", handle); err != nil {
			t.Fatal(err)
		}
		if err := db.AppendTaskEvent(a.ID, "plugin", ev); err != nil {
			t.Fatal(err)
		}
		// A second task with only a state.
		if err := db.PutTaskState(a.ID, "sidecar", &TaskState{State: TaskStateDead, Failed: true, FinishedAt: t0}); err != nil {
			t.Fatal(err)
		}
		as.Tasks["plugin"] = &TaskRecord{State: state, Handle: handle, Events: []*TaskEvent{ev}}
		as.Tasks["sidecar"] = &TaskRecord{State: &TaskState{State: TaskStateDead, Failed: true, FinishedAt: t0}}
		want = append(want, as)
	}

	// Replacing the alloc record keeps its tasks.
	changed := testAlloc("alloc-0")
	changed.ClientStatus = AllocClientStatusFailed
	if err := db.PutAlloc(changed); err != nil {
		t.Fatal(err)
	}
	want[0].Alloc = changed
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, path, Options{})
	got, err := db.LoadAllocs()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadAllocs after reopen:\n got %s\nwant %s", dumpAllocs(got), dumpAllocs(want))
	}
	allocs, err := db.Allocs()
	if err != nil || len(allocs) != 3 || !reflect.DeepEqual(allocs[0], changed) {
		t.Fatalf("Allocs() = %v, %v", allocs, err)
	}

	if err := db.DeleteTaskHandle("alloc-0", "plugin"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteTaskHandle("alloc-0", "never-ran"); err != nil {
		t.Fatalf("deleting the handle of an unknown task: %v", err)
	}
	got, err = db.LoadAllocs()
	if err != nil {
		t.Fatal(err)
	}
	if tr := got[0].Tasks["plugin"]; tr.Handle != nil || tr.State == nil || len(tr.Events) != 1 {
		t.Fatalf("after DeleteTaskHandle: %+v", tr)
	}
}

func TestDeleteAllocRemovesEverything(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	for _, id := range []string{"keep", "drop"} {
		if err := db.PutAlloc(testAlloc(id)); err != nil {
			t.Fatal(err)
		}
		if err := db.PutTaskHandle(id, "t", &TaskHandle{Pid: 1}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := db.AppendTaskEvent(id, "t", &TaskEvent{Type: "x"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.DeleteAlloc("drop"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteAlloc("drop"); err != nil {
		t.Fatalf("deleting a deleted alloc: %v", err)
	}
	all, err := db.LoadAllocs()
	if err != nil || len(all) != 1 || all[0].Alloc.ID != "keep" || len(all[0].Tasks["t"].Events) != 3 {
		t.Fatalf("after DeleteAlloc: %v %+v", err, all)
	}
	if _, err := db.taskEvents("drop", "t"); !errors.Is(err, ErrAllocNotFound) {
		t.Fatalf("TaskEvents of a deleted alloc: %v", err)
	}
	// Reusing the ID starts from nothing: no old events, sequence restarted.
	if err := db.PutAlloc(testAlloc("drop")); err != nil {
		t.Fatal(err)
	}
	if evs, err := db.taskEvents("drop", "t"); err != nil || len(evs) != 0 {
		t.Fatalf("events of a recreated alloc: %v %v", evs, err)
	}
}

func TestTaskRecordsNeedAnAlloc(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	calls := map[string]func() error{
		"PutTaskState":    func() error { return db.PutTaskState("ghost", "t", &TaskState{}) },
		"PutTaskHandle":   func() error { return db.PutTaskHandle("ghost", "t", &TaskHandle{}) },
		"AppendTaskEvent": func() error { return db.AppendTaskEvent("ghost", "t", &TaskEvent{}) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrAllocNotFound) || !strings.Contains(err.Error(), "ghost") {
			t.Errorf("%s for an unknown alloc: %v, want ErrAllocNotFound naming it", name, err)
		}
	}
	// Nothing was created on the way: a headless alloc would fail LoadAllocs.
	if all, err := db.LoadAllocs(); err != nil || len(all) != 0 {
		t.Fatalf("LoadAllocs after rejected writes: %v %v", all, err)
	}
}

func TestAllocInputValidation(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	bad := map[string]error{
		"nil alloc":          db.PutAlloc(nil),
		"empty alloc ID":     db.PutAlloc(&Alloc{}),
		"bad desired status": db.PutAlloc(&Alloc{ID: "a", DesiredStatus: "running"}),
		"bad client status":  db.PutAlloc(&Alloc{ID: "a", ClientStatus: "run"}),
		"huge alloc ID":      db.PutAlloc(&Alloc{ID: strings.Repeat("x", bbolt.MaxKeySize+1)}),
		"nil task state":     db.PutTaskState("a", "t", nil),
		"nil handle":         db.PutTaskHandle("a", "t", nil),
		"nil event":          db.AppendTaskEvent("a", "t", nil),
		"empty task name":    db.PutTaskState("a", "", &TaskState{}),
		"empty alloc delete": db.DeleteAlloc(""),
		"empty events alloc": func() error { _, err := db.taskEvents("", "t"); return err }(),
	}
	for name, err := range bad {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if all, err := db.Allocs(); err != nil || len(all) != 0 {
		t.Fatalf("rejected allocs were stored: %v %v", all, err)
	}
}

func TestTaskEventsKeepTheLastHundred(t *testing.T) {
	path := statePath(t)
	db := openTest(t, path, Options{})
	if err := db.PutAlloc(testAlloc("a")); err != nil {
		t.Fatal(err)
	}
	const total = 250
	for i := range total {
		if err := db.AppendTaskEvent("a", "t", &TaskEvent{Type: "Tick", Message: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := db.taskEvents("a", "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != maxTaskEvents {
		t.Fatalf("%d events kept, want %d", len(evs), maxTaskEvents)
	}
	for i, ev := range evs {
		if want := fmt.Sprint(total - maxTaskEvents + i); ev.Message != want {
			t.Fatalf("event %d is %q, want %q (oldest first)", i, ev.Message, want)
		}
	}
	// The bucket itself holds exactly the retained events.
	if err := db.view("count", func(tx *bbolt.Tx) error {
		n := taskBucket(tx, "a", "t").Bucket([]byte(bucketEvents)).Stats().KeyN
		if n != maxTaskEvents {
			return fmt.Errorf("events bucket holds %d keys", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if evs, err := db.taskEvents("a", "other"); err != nil || evs != nil {
		t.Fatalf("events of a task without any: %v %v", evs, err)
	}
}

func TestLoadAllocsReportsDamage(t *testing.T) {
	cases := map[string]func(ab *bbolt.Bucket) error{
		"alloc record is not JSON": func(ab *bbolt.Bucket) error { return ab.Put([]byte(keyAlloc), []byte("{")) },
		"alloc record missing":     func(ab *bbolt.Bucket) error { return ab.Delete([]byte(keyAlloc)) },
		"alloc record of another":  func(ab *bbolt.Bucket) error { return putJSON(ab, []byte(keyAlloc), testAlloc("other")) },
		"task state is not JSON": func(ab *bbolt.Bucket) error {
			return ab.Bucket([]byte(bucketTasks)).Bucket([]byte("t")).Put([]byte(keyTaskState), []byte("[]x"))
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			db := openTest(t, statePath(t), Options{})
			if err := db.PutAlloc(testAlloc("victim")); err != nil {
				t.Fatal(err)
			}
			if err := db.PutTaskState("victim", "t", &TaskState{}); err != nil {
				t.Fatal(err)
			}
			if err := db.bolt.Update(func(tx *bbolt.Tx) error {
				return damage(tx.Bucket([]byte(bucketAllocs)).Bucket([]byte("victim")))
			}); err != nil {
				t.Fatal(err)
			}
			_, err := db.LoadAllocs()
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "victim") || !strings.Contains(err.Error(), db.Path()) {
				t.Fatalf("LoadAllocs over damage: %v, want ErrCorrupt naming the alloc and file", err)
			}
		})
	}
}

func dumpAllocs(as []*AllocState) string {
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "\n  %+v", *a.Alloc)
		for name, tr := range a.Tasks {
			fmt.Fprintf(&b, "\n    %s: state=%+v handle=%+v events=%d", name, tr.State, tr.Handle, len(tr.Events))
		}
	}
	return b.String()
}

// AllocEnded, which the volume reconciler asks of every claim, says an
// allocation is over only when its record is gone or every task it wrote
// is dead.
func TestAllocEnded(t *testing.T) {
	db := openTest(t, statePath(t), Options{})
	ended := func(id string, want bool) {
		t.Helper()
		got, err := db.AllocEnded(id)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("AllocEnded(%q) = %v, want %v", id, got, want)
		}
	}
	ended("never-recorded", true)

	if err := db.PutAlloc(testAlloc("a")); err != nil {
		t.Fatal(err)
	}
	ended("a", false) // recorded, no task written yet

	// A task with only a handle has no state to say it is dead.
	if err := db.PutTaskHandle("a", "main", &TaskHandle{Driver: jobspec.DriverGoPlugin, Pid: 1}); err != nil {
		t.Fatal(err)
	}
	ended("a", false)

	if err := db.PutTaskState("a", "main", &TaskState{State: TaskStateDead, FinishedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTaskState("a", "sidecar", &TaskState{State: TaskStateRunning, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	ended("a", false) // one of two tasks still running

	if err := db.PutTaskState("a", "sidecar", &TaskState{State: TaskStateDead, Failed: true, FinishedAt: t0}); err != nil {
		t.Fatal(err)
	}
	ended("a", true)

	if err := db.DeleteAlloc("a"); err != nil {
		t.Fatal(err)
	}
	ended("a", true)
}
