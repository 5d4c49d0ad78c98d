package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/pluginhost/pluginhost/api"
)

// TestVolumeClaimChaos kills the agent with SIGKILL at random moments while
// jobs with volumes start and stop: two jobs share a multi-node-multi-writer
// volume, a third writes to a single-node-writer one. Each round runs the
// jobs, kills the agent once during the mounts, restarts it and waits until
// every task runs with its volume; then stops them, kills it once more
// during the releases, restarts it and waits until no claim, no mount and
// nothing at the plugin is left. The kill moments come from -chaos.seed
// (`make chaos` runs more rounds of TestChaos only; this one takes
// -chaos.rounds too).
func TestVolumeClaimChaos(t *testing.T) {
	seed := *chaosSeed
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	rounds := max(*chaosRounds/2, 2)
	t.Logf("seed %d, %d rounds (replay: go test ./e2e -run '^TestVolumeClaimChaos$' -chaos.seed=%d -chaos.rounds=%d)",
		seed, rounds, seed, *chaosRounds)

	e := newEnv(t, csiConfig)
	a := e.start()
	p := startVolPlugin(t, e, a, "go_plugin", "cc", map[string]string{"MOCKCSI_RECORD_CALLS": "1"})
	createVolume(t, e, "shared", "cc", "multi-node-multi-writer")
	createVolume(t, e, "own", "cc", "single-node-writer")
	dest := filepath.Join(e.root, "mnt")
	jobs := []struct{ id, vol, mode string }{
		{"s1", "shared", "multi-node-multi-writer"},
		{"s2", "shared", "multi-node-multi-writer"},
		{"o1", "own", "single-node-writer"},
	}
	// A kill lands somewhere in the first 25 ms of the work, where the
	// CSI calls and their records are (a mount takes about 10 ms).
	killSoon := func(a *agentProc) *agentProc {
		time.Sleep(time.Duration(rng.IntN(25)) * time.Millisecond)
		a.kill()
		return e.start()
	}
	for round := 1; round <= rounds; round++ {
		var allocs []string
		for _, j := range jobs {
			tk := claimTask("t", e.markerFor(j.id), fmt.Sprintf(`echo %s >> %s/log`, j.id, dest), volumeMount("data", dest, false))
			allocs = append(allocs, a.runJob(j.id, jobHCL(j.id, volumeBlock("data", j.vol, j.mode, false), tk))[0])
		}
		a = killSoon(a)
		for _, al := range allocs {
			a.waitAlloc(al, fmt.Sprintf("round %d: running after the restart", round), running("t"))
		}
		for _, vol := range []string{"shared", "own"} {
			a.waitVolume(vol, "every claim published", func(v *api.CSIVolume, err error) bool {
				if err != nil || len(v.Claims) == 0 {
					return false
				}
				for _, c := range v.Claims {
					if c.State != "published" {
						return false
					}
				}
				return true
			})
		}

		// Stop them all at once (in the background: the kill may cut the
		// requests short), then kill during the releases.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		done := make(chan struct{})
		client := a.client
		go func() {
			defer close(done)
			for _, j := range jobs {
				_ = client.StopJob(ctx, j.id, false)
			}
		}()
		a = killSoon(a)
		cancel()
		<-done
		for _, j := range jobs {
			a.stopJob(j.id) // idempotent: finishes whatever the kill cut short
		}
		for _, vol := range []string{"shared", "own"} {
			a.waitVolume(vol, fmt.Sprintf("round %d: every claim released", round), noClaims)
			p.waitMock(t, vol, "nothing published", mockClean)
		}
		if m := e.volumeMounts(t); len(m) != 0 {
			t.Fatalf("round %d: mounts left: %v", round, m)
		}
	}
}
