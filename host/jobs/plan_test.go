package jobs

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/host/jobspec"
	"github.com/pluginhost/pluginhost/host/state"
	"github.com/pluginhost/pluginhost/host/supervisor"
	"github.com/pluginhost/pluginhost/host/taskrunner"
)

// t0 is the table tests' "now"; allocations are created before it.
var t0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// testJob is a count-n job of one group "g" with one task "t".
func testJob(n int, mod ...func(*jobspec.Job)) *jobspec.Job {
	j := &jobspec.Job{ID: "web", Type: jobspec.JobTypeService, TaskGroups: []*jobspec.TaskGroup{{
		Name: "g", Count: n, Tasks: []*jobspec.Task{{Name: "t", Driver: "raw_exec"}},
		Update: &jobspec.UpdateStrategy{MinHealthyTime: time.Second, HealthyDeadline: time.Minute},
	}}}
	for _, m := range mod {
		m(j)
	}
	return j
}

func autoRevert(j *jobspec.Job) { j.TaskGroups[0].Update.AutoRevert = true }

func pluginTask(j *jobspec.Job) {
	j.TaskGroups[0].Tasks[0].CSIPluginConfig = &jobspec.TaskCSIPluginConfig{ID: "p", Type: "monolith"}
}

// rec is a job record at version v with the given outcome.
func rec(v uint64, spec *jobspec.Job, mod ...func(*state.Job)) *state.JobState {
	js := &state.JobState{Job: &state.Job{ID: spec.ID, Version: v}, Spec: &state.JobVersion{Version: v, Job: spec}}
	for _, m := range mod {
		m(js.Job)
	}
	return js
}

func outcome(v uint64, status string) func(*state.Job) {
	return func(j *state.Job) {
		j.Update = &state.UpdateOutcome{Version: v, Status: status}
		if status == state.UpdateSuccessful {
			j.LastStable = &v
		}
	}
}

func stable(v uint64) func(*state.Job) { return func(j *state.Job) { j.LastStable = &v } }

func serving(v uint64) func(*state.Job) { return func(j *state.Job) { j.Serving = &v } }

func ptr(v uint64) *uint64 { return &v }

// slowHealthy gives the group Nomad's default min_healthy_time, 10 s.
func slowHealthy(j *jobspec.Job) {
	j.TaskGroups[0].Update = &jobspec.UpdateStrategy{MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}
}

func stopped(purge bool) func(*state.Job) {
	return func(j *state.Job) { j.Stop, j.Purge = true, purge }
}

// allocation states, as a pass sees them
type aspec struct {
	id      string
	version uint64
	index   int
	age     time.Duration // created this long before t0
	// running since this long before t0 (0: pending, not started)
	up                      time.Duration
	desired                 string // "" is run
	client                  string // "" derives from up
	done, started, stopping bool
	events                  []string     // task event types, oldest first, each at t0-up
	job                     *jobspec.Job // the spec it runs; nil is testJob(2)
}

func mk(specs ...aspec) []Alloc {
	var out []Alloc
	for _, s := range specs {
		al := state.Alloc{ID: s.id, JobID: "web", JobVersion: s.version, TaskGroup: "g", Index: s.index,
			DesiredStatus: s.desired, ClientStatus: s.client, CreateTime: t0.Add(-s.age), Job: s.job}
		if al.Job == nil {
			al.Job = testJob(2)
		}
		if al.DesiredStatus == "" {
			al.DesiredStatus = state.AllocDesiredStatusRun
		}
		ts := taskrunner.TaskSnapshot{Name: "t", State: state.TaskState{State: state.TaskStatePending}}
		if s.up > 0 {
			ts.State = state.TaskState{State: state.TaskStateRunning, StartedAt: t0.Add(-s.up)}
			if al.ClientStatus == "" {
				al.ClientStatus = state.AllocClientStatusRunning
			}
		}
		if s.done {
			ts.State.State = state.TaskStateDead
		}
		for _, typ := range s.events {
			ts.Events = append(ts.Events, &state.TaskEvent{Type: typ, Time: t0.Add(-s.up)})
		}
		if al.ClientStatus == "" {
			al.ClientStatus = state.AllocClientStatusPending
		}
		out = append(out, Alloc{Snap: &taskrunner.AllocSnapshot{Alloc: al, Tasks: []taskrunner.TaskSnapshot{ts}},
			Done: s.done, Started: s.started || s.up > 0 || s.done, Stopping: s.stopping})
	}
	// newest first, as the reconciler hands them over
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Snap.Alloc.CreateTime.After(out[j].Snap.Alloc.CreateTime)
	})
	return out
}

func view(js *state.JobState, allocs []Alloc) View {
	v := View{Job: js, Allocs: allocs, Now: t0}
	if js != nil {
		v.Stable, v.HasStable = js.Job.StableVersion()
		if js.Job.Serving != nil {
			v.Serving, v.HasServing = *js.Job.Serving, true
		}
	}
	return v
}

// summary renders a plan in one line for comparison. "hold" is a pass of
// a job that should run which does not let the newest version start.
func summary(v View, p Plan) string {
	running := v.Job != nil && !v.Job.Job.Stop && !v.Job.Job.Failed(v.Job.Job.Version)
	var parts []string
	if p.Outcome != nil {
		parts = append(parts, "outcome "+p.Outcome.Status)
	}
	if p.MarkStable != nil {
		parts = append(parts, fmt.Sprintf("mark stable %d", *p.MarkStable))
	}
	stops := make([]string, len(p.Stops))
	for i, s := range p.Stops {
		stops[i] = s.AllocID + "(" + s.Reason + ")"
	}
	sort.Strings(stops)
	if len(stops) > 0 {
		parts = append(parts, "stop "+strings.Join(stops, " "))
	}
	if len(p.Superseded) > 0 {
		parts = append(parts, fmt.Sprintf("superseded %v", p.Superseded))
	}
	if len(p.Create) > 0 {
		parts = append(parts, fmt.Sprintf("create %v", p.Create))
	}
	start := slices.Clone(p.Start)
	sort.Strings(start)
	if len(start) > 0 {
		parts = append(parts, "start "+strings.Join(start, " "))
	}
	if !p.StartNew && running {
		parts = append(parts, "hold")
	}
	if len(p.Forget) > 0 {
		f := slices.Clone(p.Forget)
		sort.Strings(f)
		parts = append(parts, "forget "+strings.Join(f, " "))
	}
	if p.DeleteJob {
		parts = append(parts, "delete job")
	}
	if p.Revert {
		parts = append(parts, "revert")
	}
	if p.RequeueAfter > 0 {
		parts = append(parts, "requeue "+p.RequeueAfter.String())
	}
	return strings.Join(parts, "; ")
}

func TestDecide(t *testing.T) {
	job := testJob(2)
	sup := func(v uint64) string { return reasonSuperseded(v) }
	for _, tc := range []struct {
		name string
		v    View
		want string
	}{
		{"a new job's allocations start at once",
			view(rec(0, job), mk(aspec{id: "a0", age: time.Second}, aspec{id: "a1", index: 1, age: time.Second})),
			"start a0 a1; requeue 59s"},
		{"healthy for min_healthy_time: the roll-out succeeds",
			view(rec(0, job), mk(aspec{id: "a0", age: 3 * time.Second, up: 2 * time.Second},
				aspec{id: "a1", index: 1, age: 3 * time.Second, up: 2 * time.Second})),
			"outcome successful"},
		{"running but not yet for min_healthy_time: look again when it will be",
			view(rec(0, job), mk(aspec{id: "a0", age: 3 * time.Second, up: 2 * time.Second},
				aspec{id: "a1", index: 1, age: 3 * time.Second, up: 300 * time.Millisecond})),
			"requeue 700ms"},
		{"a missing slot is created, and not judged before it is",
			view(rec(0, job), mk(aspec{id: "a0", age: 3 * time.Second, up: 2 * time.Second})),
			"create [{g 1}]"},
		{"the stable version keeps serving while the new one starts",
			view(rec(1, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "old0", age: time.Hour, up: time.Hour}, aspec{id: "old1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "new0", version: 1, age: time.Second}, aspec{id: "new1", version: 1, index: 1, age: time.Second})),
			"start new0 new1; requeue 59s"},
		{"the new version healthy: the stable one is replaced",
			view(rec(1, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "old0", age: time.Hour, up: time.Hour}, aspec{id: "old1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "new0", version: 1, age: 5 * time.Second, up: 4 * time.Second},
				aspec{id: "new1", version: 1, index: 1, age: 5 * time.Second, up: 4 * time.Second})),
			"outcome successful; stop old0(replaced by healthy version 1) old1(replaced by healthy version 1)"},
		{"bounded: a version superseded before it was healthy stops at once, the newest waits for it",
			view(rec(2, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "s0", age: time.Hour, up: time.Hour}, aspec{id: "s1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "u0", version: 1, age: 2 * time.Second, up: time.Second / 2},
				aspec{id: "u1", version: 1, index: 1, age: 2 * time.Second},
				aspec{id: "n0", version: 2, age: time.Millisecond}, aspec{id: "n1", version: 2, index: 1, age: time.Millisecond})),
			"stop u0(" + sup(2) + ") u1(" + sup(2) + "); superseded [1]; hold; requeue 59.999s"},
		{"bounded: a superseded version still dying holds the newest back",
			view(rec(2, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "s0", age: time.Hour, up: time.Hour}, aspec{id: "s1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "u0", version: 1, age: 2 * time.Second, up: time.Second, desired: state.AllocDesiredStatusStop, stopping: true},
				aspec{id: "n0", version: 2, age: time.Second}, aspec{id: "n1", version: 2, index: 1, age: time.Second})),
			"hold; requeue 59s"},
		{"bounded: once the superseded version is dead the newest starts",
			view(rec(2, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "s0", age: time.Hour, up: time.Hour}, aspec{id: "s1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "u0", version: 1, age: 2 * time.Second, desired: state.AllocDesiredStatusStop, done: true},
				aspec{id: "n0", version: 2, age: time.Second}, aspec{id: "n1", version: 2, index: 1, age: time.Second})),
			"start n0 n1; requeue 59s"},
		{"an earlier version healthy now, its outcome not recorded yet, keeps serving and is recorded",
			view(rec(1, job), mk(
				aspec{id: "h0", age: 3 * time.Second, up: 2 * time.Second}, aspec{id: "h1", index: 1, age: 3 * time.Second, up: 2 * time.Second},
				aspec{id: "n0", version: 1, age: time.Millisecond}, aspec{id: "n1", version: 1, index: 1, age: time.Millisecond})),
			"mark stable 0; start n0 n1; requeue 59.999s"},
		{"the newest healthy earlier version is the one kept",
			view(rec(3, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "s0", age: time.Hour, up: time.Hour}, aspec{id: "s1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "h0", version: 2, age: 3 * time.Second, up: 2 * time.Second},
				aspec{id: "h1", version: 2, index: 1, age: 3 * time.Second, up: 2 * time.Second},
				aspec{id: "n0", version: 3, age: time.Millisecond}, aspec{id: "n1", version: 3, index: 1, age: time.Millisecond})),
			"mark stable 2; stop s0(replaced by healthy version 2) s1(replaced by healthy version 2); hold; requeue 59.999s"},
		{"bounded: without a stable version every earlier one is superseded",
			view(rec(1, job), mk(
				aspec{id: "u0", age: 2 * time.Second, up: time.Second},
				aspec{id: "n0", version: 1, age: time.Second}, aspec{id: "n1", version: 1, index: 1, age: time.Second})),
			"stop u0(" + sup(1) + "); superseded [0]; hold; requeue 59s"},
		{"bounded: versions older than the stable one are replaced, not superseded",
			view(rec(3, job, outcome(1, state.UpdateSuccessful)), mk(
				aspec{id: "v0", age: time.Hour, up: time.Hour},
				aspec{id: "s0", version: 1, age: time.Minute, up: time.Minute},
				aspec{id: "n0", version: 3, age: time.Second, up: time.Second / 2},
				aspec{id: "n1", version: 3, index: 1, age: time.Second, up: time.Second / 2})),
			// Strictly two versions: v0 is still dying.
			"stop v0(replaced by healthy version 1); hold; requeue 500ms"},
		{"after a crash: the held-back newest waits for the superseded, the stable version's unstarted slot starts",
			view(rec(2, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "s0", age: time.Hour, up: time.Hour}, aspec{id: "s1", index: 1, age: time.Minute},
				aspec{id: "u0", version: 1, age: 2 * time.Second, up: time.Second, desired: state.AllocDesiredStatusStop},
				aspec{id: "n0", version: 2, age: time.Second}, aspec{id: "n1", version: 2, index: 1, age: time.Second})),
			"start s1; hold; requeue 59s"},
		{"a failed allocation fails the roll-out; the stable version stays, the new one stops",
			view(rec(1, testJob(2, autoRevert), outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "old0", age: time.Hour, up: time.Hour}, aspec{id: "old1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "new0", version: 1, age: 5 * time.Second, client: state.AllocClientStatusFailed, done: true},
				aspec{id: "new1", version: 1, index: 1, age: 5 * time.Second, up: 4 * time.Second})),
			"outcome failed; stop new0(update failed) new1(update failed); revert"},
		{"a failure recorded before a kill -9: the pass reverts again (chaos)",
			view(rec(1, testJob(2, autoRevert), outcome(1, state.UpdateFailed), stable(0)), mk(
				aspec{id: "old0", age: time.Hour, up: time.Hour}, aspec{id: "old1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "new0", version: 1, age: 5 * time.Second, desired: state.AllocDesiredStatusStop, done: true},
				aspec{id: "new1", version: 1, index: 1, age: 5 * time.Second, desired: state.AllocDesiredStatusStop, done: true})),
			"revert"},
		{"a failed first version keeps running: nothing else would serve",
			view(rec(0, job, outcome(0, state.UpdateFailed)), mk(
				aspec{id: "a0", age: 5 * time.Second, up: 4 * time.Second}, aspec{id: "a1", index: 1, age: 5 * time.Second, client: state.AllocClientStatusFailed, done: true})),
			""},
		{"not healthy within healthy_deadline fails the roll-out",
			view(rec(1, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "old0", age: time.Hour, up: time.Hour},
				aspec{id: "new0", version: 1, age: 2 * time.Minute},
				aspec{id: "new1", version: 1, index: 1, age: 2 * time.Minute, up: time.Minute})),
			"outcome failed; stop new0(update failed) new1(update failed)"},
		{"a stopped allocation holds no slot of its version (chaos seed 11)",
			view(rec(0, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "a0", age: time.Hour, up: time.Hour},
				aspec{id: "a1", index: 1, age: time.Hour, desired: state.AllocDesiredStatusStop, done: true})),
			"create [{g 1}]"},
		{"a duplicate of a slot is stopped, the oldest kept",
			view(rec(0, job, outcome(0, state.UpdateSuccessful)), mk(
				aspec{id: "a0", age: time.Hour, up: time.Hour}, aspec{id: "a1", index: 1, age: time.Hour, up: time.Hour},
				aspec{id: "dup", index: 1, age: time.Minute, up: time.Minute},
				aspec{id: "gone", index: 5, age: time.Minute, up: time.Minute})),
			"stop dup(" + ReasonOutsideSlots + ") gone(" + ReasonOutsideSlots + ")"},
		{"rolled out already: a leftover of an earlier version stops",
			view(rec(1, job, outcome(1, state.UpdateSuccessful)), mk(
				aspec{id: "old0", age: time.Hour, up: time.Hour},
				aspec{id: "new0", version: 1, age: time.Minute, up: time.Minute},
				aspec{id: "new1", version: 1, index: 1, age: time.Minute, up: time.Minute})),
			"stop old0(replaced by healthy version 1); hold"},
		{"a single-writer volume: the stable version stops first",
			View{Job: rec(1, job, outcome(0, state.UpdateSuccessful)), Exclusive: true, Stable: 0, HasStable: true, Now: t0,
				Allocs: mk(aspec{id: "old0", age: time.Hour, up: time.Hour},
					aspec{id: "new0", version: 1, age: time.Second}, aspec{id: "new1", version: 1, index: 1, age: time.Second})},
			"stop old0(" + ReasonExclusive + "); start new0 new1; requeue 59s"},
		{"stopping allocations are not stopped twice",
			view(rec(0, job, stopped(false)), mk(
				aspec{id: "a0", age: time.Hour, up: time.Hour, desired: state.AllocDesiredStatusStop, stopping: true},
				aspec{id: "a1", index: 1, age: time.Hour, up: time.Hour})),
			"stop a1(job stopped)"},
		{"a purge waits for every allocation to be dead",
			view(rec(0, job, stopped(true)), mk(
				aspec{id: "a0", age: time.Hour, desired: state.AllocDesiredStatusStop, done: true},
				aspec{id: "a1", index: 1, age: time.Hour, up: time.Hour, desired: state.AllocDesiredStatusStop, stopping: true})),
			""},
		{"a purge forgets the allocations and the job once all are dead",
			view(rec(0, job, stopped(true)), mk(
				aspec{id: "a0", age: time.Hour, desired: state.AllocDesiredStatusStop, done: true},
				aspec{id: "a1", index: 1, age: time.Hour, desired: state.AllocDesiredStatusStop, done: true})),
			"forget a0 a1; delete job"},
		{"no record (an interrupted purge): the dead are forgotten, the live stopped",
			view(nil, mk(
				aspec{id: "a0", age: time.Hour, desired: state.AllocDesiredStatusStop, done: true},
				aspec{id: "a1", index: 1, age: time.Hour, up: time.Hour})),
			"stop a1(job purged); forget a0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summary(tc.v, Decide(tc.v)); got != tc.want {
				t.Errorf("plan:\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

// TestDecideEarlyUpdate follows a plugin job updated 5 s after its first
// version became healthy, with min_healthy_time 10 s, to a version that
// never does (issue 26 §3). Version 0 served when version 1 arrived, so it
// keeps serving although it was never healthy for min_healthy_time; it is
// recorded as stable once it has been, and the broken version stops at its
// healthy_deadline. Before, version 0 was stopped at once as "superseded
// before it became healthy", and no plugin was left.
func TestDecideEarlyUpdate(t *testing.T) {
	job := testJob(1, slowHealthy, pluginTask)
	healthy := []string{taskrunner.EventStarted, supervisor.EventPluginHealthy}
	starting := []string{taskrunner.EventStarted}
	v0 := func(up time.Duration) aspec {
		return aspec{id: "v0", age: up + time.Second, up: up, events: healthy, job: job}
	}
	v1 := func(age time.Duration) aspec {
		return aspec{id: "v1", version: 1, age: age, up: age, events: starting, job: job}
	}
	for _, tc := range []struct {
		name string
		v    View
		want string
	}{
		{"the update arrives: version 0 keeps serving, version 1 starts",
			view(rec(1, job, serving(0)), mk(v0(5*time.Second), aspec{id: "v1", version: 1, job: job})),
			"start v1; requeue 1m0s"},
		{"before the fix, without the serving record, version 0 was superseded at once",
			view(rec(1, job), mk(v0(5*time.Second), aspec{id: "v1", version: 1, job: job})),
			"stop v0(" + reasonSuperseded(1) + "); superseded [0]; hold; requeue 1m0s"},
		{"version 0 still young, version 1 not ready: both run",
			view(rec(1, job, serving(0)), mk(v0(8*time.Second), v1(3*time.Second))),
			"requeue 57s"},
		{"version 0 healthy for min_healthy_time now: recorded as stable, still serving",
			view(rec(1, job, serving(0)), mk(v0(12*time.Second), v1(7*time.Second))),
			"mark stable 0; requeue 53s"},
		{"version 1 misses its healthy_deadline: it stops, version 0 serves on",
			view(rec(1, job, serving(0), stable(0)), mk(v0(time.Minute+6*time.Second), v1(time.Minute))),
			"outcome failed; stop v1(update failed)"},
		{"version 1 misses its deadline before version 0 was ever stable: version 0 still serves",
			view(rec(1, job, serving(0)), mk(v0(9*time.Second), v1(time.Minute))),
			"outcome failed; stop v1(update failed)"},
		{"version 1 healthy instead: version 0 is replaced",
			view(rec(1, job, serving(0)), mk(v0(30*time.Second),
				aspec{id: "v1", version: 1, age: 20 * time.Second, up: 20 * time.Second, events: healthy, job: job})),
			"outcome successful; mark stable 0; stop v0(replaced by healthy version 1)"},
		{"the serving version restarting is still kept: the record says it served",
			view(rec(1, job, serving(0)), mk(aspec{id: "v0", age: 9 * time.Second, up: time.Second, events: starting, job: job}, v1(3*time.Second))),
			"requeue 57s"},
		{"bounded: a version that never served is superseded, the serving one kept",
			view(rec(2, job, serving(0)), mk(v0(5*time.Second), v1(3*time.Second), aspec{id: "v2", version: 2, job: job})),
			"stop v1(" + reasonSuperseded(2) + "); superseded [1]; hold; requeue 1m0s"},
		{"bounded: stable, serving and newest at most; an older serving version is superseded",
			view(rec(3, job, stable(0), serving(2)), mk(v0(time.Hour),
				aspec{id: "v1", version: 1, age: 9 * time.Second, up: 8 * time.Second, events: healthy, job: job},
				aspec{id: "v2", version: 2, age: 5 * time.Second, up: 4 * time.Second, events: healthy, job: job},
				aspec{id: "v3", version: 3, job: job})),
			"stop v1(" + reasonSuperseded(3) + "); superseded [1]; hold; requeue 1m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summary(tc.v, Decide(tc.v)); got != tc.want {
				t.Errorf("plan:\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

// TestServingVersion: what serves when an update arrives is the newest
// version whose every slot is healthy now, for however short a time.
func TestServingVersion(t *testing.T) {
	job := testJob(2, slowHealthy)
	plugin := testJob(1, slowHealthy, pluginTask)
	up := func(id string, v uint64, index int, d time.Duration) aspec {
		return aspec{id: id, version: v, index: index, age: d, up: d, job: job}
	}
	for _, tc := range []struct {
		name   string
		allocs []Alloc
		stable *uint64
		want   uint64
		ok     bool
	}{
		{"nothing runs", nil, nil, 0, false},
		{"a version running for a moment serves", mk(up("a", 0, 0, time.Second), up("b", 0, 1, time.Second)), nil, 0, true},
		{"a slot not running yet: not serving", mk(up("a", 0, 0, time.Second), aspec{id: "b", index: 1, job: job}), nil, 0, false},
		{"a slot missing: not serving", mk(up("a", 0, 0, time.Second)), nil, 0, false},
		{"without a stable version the newest serving one wins", mk(up("a", 0, 0, time.Hour), up("b", 0, 1, time.Hour),
			up("c", 1, 0, time.Second), up("d", 1, 1, time.Second)), nil, 1, true},
		{"the stable version first, when it serves", mk(up("a", 0, 0, time.Hour), up("b", 0, 1, time.Hour),
			up("c", 1, 0, time.Second), up("d", 1, 1, time.Second)), ptr(0), 0, true},
		{"a younger version when the stable one is down", mk(up("a", 0, 0, time.Hour), aspec{id: "b", index: 1, job: job},
			up("c", 1, 0, time.Second), up("d", 1, 1, time.Second)), ptr(0), 1, true},
		{"a newer version still starting does not serve", mk(up("a", 0, 0, time.Hour), up("b", 0, 1, time.Hour),
			up("c", 1, 0, time.Second), aspec{id: "d", version: 1, index: 1, job: job}), nil, 0, true},
		{"stopping allocations do not serve", mk(
			aspec{id: "a", age: time.Hour, up: time.Hour, job: job, stopping: true}, up("b", 0, 1, time.Hour)), nil, 0, false},
		{"a plugin task serves once its plugin is healthy", mk(aspec{id: "p", age: time.Second, up: time.Second, job: plugin,
			events: []string{taskrunner.EventStarted, supervisor.EventPluginHealthy}}), nil, 0, true},
		{"a plugin task not yet healthy does not", mk(aspec{id: "p", age: time.Second, up: time.Second, job: plugin,
			events: []string{taskrunner.EventStarted}}), nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stable uint64
			if tc.stable != nil {
				stable = *tc.stable
			}
			got, ok := ServingVersion(tc.allocs, stable, tc.stable != nil)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ServingVersion = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestJudgeRollout(t *testing.T) {
	snaps := func(allocs []Alloc) []*taskrunner.AllocSnapshot {
		out := make([]*taskrunner.AllocSnapshot, len(allocs))
		for i, a := range allocs {
			out[i] = a.Snap
		}
		return out
	}
	plugin := testJob(1, pluginTask)
	for _, tc := range []struct {
		name   string
		job    *jobspec.Job
		allocs []Alloc
		want   rollout
	}{
		{"no allocations (count 0) is healthy", testJob(0), nil, rollout{healthy: true}},
		{"complete allocations count as healthy", testJob(1),
			mk(aspec{id: "a", age: time.Minute, client: state.AllocClientStatusComplete, done: true}), rollout{healthy: true}},
		{"a plugin task is healthy only once its plugin is", plugin,
			mk(aspec{id: "a", age: 30 * time.Second, up: 30 * time.Second, events: []string{taskrunner.EventStarted}}),
			rollout{wait: 30 * time.Second}},
		{"a plugin healthy for min_healthy_time", plugin,
			mk(aspec{id: "a", age: time.Minute, up: time.Minute, events: []string{taskrunner.EventStarted, supervisor.EventPluginHealthy}}),
			rollout{healthy: true}},
		{"a plugin unhealthy again", plugin,
			mk(aspec{id: "a", age: 30 * time.Second, up: 30 * time.Second, events: []string{supervisor.EventPluginHealthy, supervisor.EventPluginUnhealthy}}),
			rollout{wait: 30 * time.Second}},
		{"a failed allocation fails it", testJob(1),
			mk(aspec{id: "abcdef0123", age: time.Minute, client: state.AllocClientStatusFailed, done: true}),
			rollout{unhealthy: "allocation abcdef01 failed"}},
		{"the deadline counts from creation", testJob(1),
			mk(aspec{id: "abcdef0123", age: time.Minute}),
			rollout{unhealthy: "allocation abcdef01 not healthy within healthy_deadline 1m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeRollout(tc.job, snaps(tc.allocs), t0); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
