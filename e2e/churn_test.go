package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// churnMeasure runs TestChurnResources, which takes about 2.5 minutes and
// is not part of `make test`.
var churnMeasure = flag.Bool("churn", false, "TestChurnResources: measure the agent's RSS and descriptors after 25 s of steady updates and 2 minutes of quiet")

// churnJob is a count-n job whose every task is one `sleep` process
// carrying marker and its version in the environment.
func churnJob(id, marker string, n, version int) string {
	tk := shTask("t", marker, "exec sleep 3600")
	tk.env = map[string]string{"E2E_VERSION": strconv.Itoa(version)}
	return jobHCL(id, fmt.Sprintf("    count = %d\n", n), tk)
}

// procsOf are the live processes carrying marker, by E2E_VERSION.
func procsOf(marker string) (total int, byVersion map[string]int) {
	byVersion = map[string]int{}
	kv := markerEnv(marker)
	for _, p := range scanProcs() {
		if !p.hasEnv(kv) {
			continue
		}
		total++
		v := "?"
		for _, e := range strings.Split(string(p.environ), "\x00") {
			if s, ok := strings.CutPrefix(e, "E2E_VERSION="); ok {
				v = s
			}
		}
		byVersion[v]++
	}
	return total, byVersion
}

// TestUpdateChurnIsBounded: a count-3 job submitted again with a new
// version every 200 ms, 50 times. Before the rollout was bounded every
// unfinished version kept running (150 task processes); now at most the
// last healthy version's 3 and the newest's 3 run, sampled from /proc after
// every submission and every 20 ms in between, and at the end the newest
// version is healthy and nothing else runs.
func TestUpdateChurnIsBounded(t *testing.T) {
	const count, versions = 3, 50
	e := newEnv(t, "")
	a := e.start()
	marker := e.markerFor("churn")
	a.runJob("churn", churnJob("churn", marker, count, 0))
	a.mustWait("version 0 healthy", 30*time.Second, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "churn")
		return err == nil && j.Update != nil && j.Update.Version == 0 && j.Update.Status == "successful", err
	}, api.TopicJob, api.TopicAllocation)

	// A sampler between the submissions: the bound holds at every moment,
	// not only when a submission has been answered.
	var worst atomic.Int64
	var worstSeen atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	sample := func() {
		n, byV := procsOf(marker)
		if int64(n) > worst.Load() {
			worst.Store(int64(n))
			worstSeen.Store(fmt.Sprint(byV))
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	// The submissions' pace is the load this test applies, not a wait.
	pace := time.NewTicker(200 * time.Millisecond)
	for v := 1; v <= versions; v++ {
		a.runJob("churn", churnJob("churn", marker, count, v))
		if n, byV := procsOf(marker); n > 2*count {
			cancel()
			wg.Wait()
			t.Fatalf("after submission %d: %d task processes %v, want at most %d", v, n, byV, 2*count)
		}
		<-pace.C
	}
	pace.Stop()
	cancel()
	wg.Wait()
	if w := worst.Load(); w > 2*count {
		t.Fatalf("a sample saw %d task processes %v, want at most %d", w, worstSeen.Load(), 2*count)
	}
	t.Logf("at most %d task processes at once during %d updates", worst.Load(), versions)

	want := strconv.Itoa(versions)
	a.mustWait("the newest version healthy and alone", 60*time.Second, func(ctx context.Context) (bool, error) {
		j, err := a.client.Job(ctx, "churn")
		if err != nil || j.Update == nil || j.Update.Version != versions || j.Update.Status != "successful" {
			return false, err
		}
		n, byV := procsOf(marker)
		return n == count && byV[want] == count, nil
	}, api.TopicJob, api.TopicAllocation, api.TopicTask)

	// Nothing else wants to run, and the superseded versions said why
	// they stopped.
	allocs, err := a.client.JobAllocations(context.Background(), "churn")
	if err != nil {
		t.Fatal(err)
	}
	superseded := 0
	for _, al := range allocs {
		if al.DesiredStatus == api.AllocDesiredStatusRun && al.JobVersion != versions {
			t.Errorf("allocation %s of version %d still wants to run", short(al.ID), al.JobVersion)
		}
		if al.JobVersion == 0 || al.JobVersion == versions {
			continue
		}
		full, err := a.client.Allocation(context.Background(), al.ID)
		if err != nil {
			continue // collected meanwhile
		}
		for _, ev := range events(full, "t", "Killing") {
			if strings.Contains(ev.DisplayMessage, "superseded by version") {
				superseded++
			}
		}
	}
	if superseded == 0 {
		t.Errorf("no superseded allocation says so in its Killing event")
	}
}

// TestChurnResources (with -churn) is the measurement asked for by issue
// 21: two clients submit new versions of their jobs (two count-3 jobs
// each: 12 tasks wanted) back to back for 25 s; then the agent's RSS and
// open descriptors, and the task and log shipper processes, are measured
// at once and again after 2 minutes.
func TestChurnResources(t *testing.T) {
	if !*churnMeasure {
		t.Skip("a 2.5 minute measurement: run with -churn")
	}
	e := newEnv(t, "")
	a := e.start()
	measure := func(when string) {
		rss := "?"
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.pid())); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
					rss = strings.TrimSpace(v)
				}
			}
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", a.pid()))
		tasks := 0
		for c := 0; c < 2; c++ {
			for j := 0; j < 2; j++ {
				n, _ := procsOf(e.markerFor(fmt.Sprintf("c%dj%d", c, j)))
				tasks += n
			}
		}
		shippers := 0
		for _, p := range scanProcs() {
			if strings.Contains(string(p.cmdline), "logmon") && strings.Contains(string(p.cmdline)+string(p.environ), e.root) {
				shippers++
			}
		}
		t.Logf("%s: agent RSS %s, %d open descriptors; %d task processes, %d log shippers (12 tasks wanted)",
			when, rss, len(fds), tasks, shippers)
	}
	measure("before the churn")
	deadline := time.Now().Add(25 * time.Second)
	var wg sync.WaitGroup
	var submitted atomic.Int64
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := 0; time.Now().Before(deadline); v++ {
				for j := 0; j < 2; j++ {
					id := fmt.Sprintf("c%dj%d", c, j)
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					_, err := a.client.RegisterJobSource(ctx, id+".hcl", []byte(churnJob(id, e.markerFor(id), 3, v)))
					cancel()
					if err != nil {
						t.Errorf("client %d: %v", c, err)
						return
					}
					submitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d submissions in 25 s", submitted.Load())
	measure("at the end of the churn")
	quiet := time.NewTimer(2 * time.Minute)
	<-quiet.C
	measure("2 minutes later")
}
