package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/internal/baseline"
	"github.com/pluginhost/pluginhost/internal/testbin"
)

// BenchmarkCSIJobRunToHealthy measures `job run` of a go_plugin mockcsi
// monolith → both halves registered and fingerprinted healthy (the CSI
// manager's PluginHealthy events), and in the same run a bare go-plugin
// launch of the same binary → dispense → first Probe. Goal: x-bare ≤ 2.
func BenchmarkCSIJobRunToHealthy(b *testing.B) {
	e := newEnv(b, csiConfig)
	a := e.start()
	m := e.markerFor("bench")
	mockcsi := testbin.MustPath(b, "mockcsi")
	bareDir := e.root + "/bare"
	ctx := context.Background()
	vs := paired{label: "bare"}
	n := 0
	for b.Loop() {
		b.StopTimer()
		id := fmt.Sprintf("csib-%d", n)
		n++
		src := []byte(jobHCL(id, "", csiTask(b, "go_plugin", "plugin", m, id, "30s")))
		es, err := a.client.Events(ctx, api.TopicPlugin)
		if err != nil {
			b.Fatalf("subscribe: %v", err)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := a.client.RegisterJobSource(ctx, id+".hcl", src); err != nil {
			b.Fatalf("register: %v", err)
		}
		healthy := map[string]bool{}
		for !healthy["csi-node"] || !healthy["csi-controller"] {
			ev, err := es.Next(ctx)
			if err != nil {
				b.Fatalf("event stream: %v", err)
			}
			if ev.Key == id {
				healthy[ev.Payload.PluginType] = ev.Type == "PluginHealthy"
			}
		}
		agentTook := time.Since(start)
		b.StopTimer()
		_ = es.Close()

		// A fresh task dir, as every allocation gets: mockcsi creates its
		// state dirs on a first start, under the agent and here alike
		// (reusing one dir made the bare side a warm start).
		start = time.Now()
		kill, err := baseline.GoPluginFirstProbe(mockcsi, fmt.Sprintf("%s/%d", bareDir, n))
		if err != nil {
			b.Fatal(err)
		}
		vs.add(agentTook, time.Since(start))
		kill()

		if err := a.client.StopJob(ctx, id, true); err != nil {
			b.Fatalf("stop %s: %v", id, err)
		}
		b.StartTimer()
	}
	vs.report(b)
}

// restartPlugins is how many CSI plugins BenchmarkCSIRestart re-adopts.
const restartPlugins = 100

// BenchmarkCSIRestart kills the agent with SIGKILL while 100 go_plugin
// mockcsi plugins (100 plugin IDs) run and measures the next agent from exec
// to every plugin healthy in `plugin status` (the agent reports ready once
// it has fingerprinted every restored plugin). No plugin may be relaunched.
// Goal: ≤ 0.5 s.
func BenchmarkCSIRestart(b *testing.B) {
	e := newEnv(b, csiConfig)
	a := e.start()
	m := e.markerFor("many")
	for i := range restartPlugins {
		id := fmt.Sprintf("many-%03d", i)
		a.runJob(id, jobHCL(id, "", csiTask(b, "go_plugin", "plugin", m, id, "30s")))
	}
	allHealthy := func(a *agentProc) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			list, err := a.client.Plugins(ctx)
			if err != nil {
				return false, err
			}
			n := 0
			for _, p := range list {
				if strings.HasPrefix(p.ID, "many-") && p.NodesHealthy == 1 && p.ControllersHealthy == 1 {
					n++
				}
			}
			return n == restartPlugins, nil
		}
	}
	restartLoop(b, e, a, m, restartPlugins, "plugins healthy", api.TopicPlugin, allHealthy, nil)
}
