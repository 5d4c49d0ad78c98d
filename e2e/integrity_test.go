package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// jobConverged waits until the job's allocations that should run are
// exactly want, all of version, all running.
func (a *agentProc) jobConverged(job string, version uint64, want int, d time.Duration) {
	a.t.Helper()
	a.mustWait(fmt.Sprintf("job %s to run %d allocations of version %d", job, want, version), d,
		func(ctx context.Context) (bool, error) {
			j, err := a.client.Job(ctx, job)
			if err != nil {
				return false, err
			}
			stubs, err := a.client.JobAllocations(ctx, job)
			if err != nil {
				return false, err
			}
			n := 0
			for _, s := range stubs {
				if s.DesiredStatus != api.AllocDesiredStatusRun {
					continue
				}
				if s.JobVersion != version || s.ClientStatus != api.AllocClientStatusRunning {
					return false, nil
				}
				n++
			}
			return j.Version == version && n == want, nil
		}, api.TopicAllocation, api.TopicTask)
}

// TestSubmissionAllOrNothing kills the agent at random moments while it
// records a 40-allocation job: after the restart the job is either unknown
// or whole, never part of it, and submitting the file again converges.
// Before the job record, allocations were committed one by one and a kill
// left 8 of 40, which a re-submission called "unchanged".
func TestSubmissionAllOrNothing(t *testing.T) {
	e := newEnv(t, "")
	rng := rand.New(rand.NewPCG(8, 40))
	const count = 40
	for trial := range 4 {
		id := fmt.Sprintf("whole%d", trial)
		marker := e.markerFor(id)
		src := jobHCL(id, fmt.Sprintf("count = %d\n%s", count, restartPolicy), shTask("t", marker, sleeper))

		a := e.start()
		submitted := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := a.client.RegisterJobSource(ctx, id+".hcl", []byte(src))
			submitted <- err
		}()
		// A kill at a random moment of the submission, not a wait for
		// anything: the test is about what a crash there leaves.
		time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
		a.kill()
		err := <-submitted

		a = e.start()
		stubs, lerr := a.client.JobAllocations(context.Background(), id)
		switch {
		case errors.Is(lerr, api.ErrNotFound):
			if err == nil {
				t.Fatalf("trial %d: the submission was answered, then lost", trial)
			}
		case lerr != nil:
			t.Fatalf("trial %d: allocations: %v", trial, lerr)
		case len(stubs) != count:
			t.Fatalf("trial %d: %d of %d allocations after the crash (submission error: %v)", trial, len(stubs), count, err)
		}
		t.Logf("trial %d: %d allocations recorded (submission: %v)", trial, len(stubs), err)

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := a.client.RegisterJobSource(ctx, id+".hcl", []byte(src)); err != nil {
			t.Fatalf("trial %d: re-submitting: %v", trial, err)
		}
		cancel()
		a.jobConverged(id, 0, count, 60*time.Second)
		if n := len(topMarked(marker)); n != count {
			t.Fatalf("trial %d: %d processes run, want %d", trial, n, count)
		}
		a.stopAndCheckNoOrphans(id, marker)
		a.kill()
	}
}

// TestInterruptedUpdateFinishes kills the agent right after it accepted an
// update, while the old version still runs and waits for the new one: the
// restarted agent finishes the update from the job record. Before it, the
// old allocations' stop lived only in memory and both versions ran forever.
func TestInterruptedUpdateFinishes(t *testing.T) {
	e := newEnv(t, "")
	const count = 3
	m1, m2 := e.markerFor("v1"), e.markerFor("v2")
	group := fmt.Sprintf("count = %d\n%s", count, restartPolicy)

	a := e.start()
	a.runJob("upd", jobHCL("upd", group, shTask("t", m1, sleeper)))
	a.jobConverged("upd", 0, count, 30*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.client.RegisterJobSource(ctx, "upd.hcl", []byte(jobHCL("upd", group, shTask("t", m2, sleeper)))); err != nil {
		t.Fatalf("update: %v", err)
	}
	a.kill()

	a = e.start()
	a.jobConverged("upd", 1, count, 60*time.Second)
	waitGone(t, m1, 10*time.Second)
	if n := len(topMarked(m2)); n != count {
		t.Fatalf("%d processes of version 1 run, want %d", n, count)
	}
	// The summary counts what runs: once the old version's allocations
	// have recorded their end (an event after their processes are gone),
	// exactly the new ones. It used to say "Running 3" while 6 ran.
	a.mustWait("job status counting what runs", 30*time.Second, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "upd")
		if err != nil {
			return false, err
		}
		return j.JobSummary.Summary["g"].Running == count, nil
	}, api.TopicAllocation)

	// Re-submitting the first version is a new version, not "unchanged".
	resp, err := a.client.RegisterJobSource(ctx, "upd.hcl", []byte(jobHCL("upd", group, shTask("t", m1, sleeper))))
	if err != nil || len(resp.AllocIDs) != count {
		t.Fatalf("re-submitting version 0's file: %v %+v", err, resp)
	}
	a.jobConverged("upd", 2, count, 60*time.Second)
	waitGone(t, m2, 10*time.Second)

	// History and revert, end to end.
	vs, err := a.client.JobVersions(ctx, "upd")
	if err != nil || len(vs) != 3 || vs[0].Version != 2 || vs[2].Version != 0 {
		t.Fatalf("versions: %v %+v", err, vs)
	}
	if _, err := a.client.RevertJob(ctx, "upd", 1); err != nil {
		t.Fatalf("revert: %v", err)
	}
	a.jobConverged("upd", 3, count, 60*time.Second)
	waitGone(t, m1, 10*time.Second)
	a.stopAndCheckNoOrphans("upd", m1, m2)
}
