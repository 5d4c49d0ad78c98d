package csi

import (
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"google.golang.org/grpc/codes"
)

type observed struct {
	method string
	code   codes.Code
	d      time.Duration
}

type recordingObserver struct {
	mu    sync.Mutex
	calls []observed
}

func (o *recordingObserver) ObserveRPC(method string, code codes.Code, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, observed{method, code, d})
}

// One observation per call, retries included in its duration, with the
// final outcome's code.
func TestClientObserverSeesEveryCallOnce(t *testing.T) {
	p := csitest.NewFakePlugin()
	p.Script["Probe"] = []codes.Code{codes.Unavailable}
	p.Always["CreateVolume"] = codes.InvalidArgument
	s := csitest.Serve(t, p, "")
	obs := &recordingObserver{}
	c, err := NewClient(ClientConfig{Endpoint: s.Socket, Observer: obs,
		Retry: RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	if _, err := c.Probe(t.Context(), &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if _, err := c.CreateVolume(t.Context(), &csipb.CreateVolumeRequest{Name: "v"}); err == nil {
		t.Fatal("CreateVolume: no error")
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.calls) != 2 {
		t.Fatalf("observed %+v, want 2 calls", obs.calls)
	}
	if o := obs.calls[0]; o.method != "Probe" || o.code != codes.OK || o.d <= 0 {
		t.Errorf("probe observed as %+v, want Probe OK with a duration (after one retry)", o)
	}
	if o := obs.calls[1]; o.method != "CreateVolume" || o.code != codes.InvalidArgument {
		t.Errorf("create observed as %+v, want CreateVolume InvalidArgument", o)
	}
	if p.CallCount("Probe") != 2 {
		t.Errorf("Probe reached the plugin %d times, want 2 (one retry)", p.CallCount("Probe"))
	}
}
