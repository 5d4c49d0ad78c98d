package driver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// refusingCgroup is a v1 group that no process may join.
type refusingCgroup struct{}

func (refusingCgroup) Path() string                { return "/test/refusing" }
func (refusingCgroup) CloneFD() (int, bool, error) { return -1, false, nil }
func (refusingCgroup) AddPid(int) error            { return errors.New("refused") }
func (refusingCgroup) Kill(context.Context) error  { return nil }
func (refusingCgroup) OOMKills() (uint64, error)   { return 0, nil }
func (refusingCgroup) Pids() ([]int, error)        { return nil, nil }

// A task that cannot be put in its group is not started, and its launch
// leaves no descriptor open in the agent (the pidfd of the process it
// killed).
func TestStartChildCgroupRefused(t *testing.T) {
	const n = 5
	before := openFDs(t)
	for range n {
		if _, err := startChild(exec.Command("/bin/true"), refusingCgroup{}, nil); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("start in a refusing cgroup: %v", err)
		}
	}
	// Other tests' goroutines may hold a descriptor or two for a moment;
	// a leak is one per launch.
	if after := openFDs(t); after-before >= n {
		t.Fatalf("%d descriptors open before %d refused launches, %d after", before, n, after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
