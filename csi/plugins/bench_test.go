package plugins

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"github.com/pluginhost/pluginhost/dynamic"
)

// BenchmarkFingerprintNode measures one periodic health fingerprint of a
// node plugin (Probe + NodeGetCapabilities after the once-only part).
func BenchmarkFingerprintNode(b *testing.B) {
	s := csitest.Serve(b, csitest.NewFakePlugin(), "")
	f := newFingerprinter(csitest.Info(dynamic.PluginTypeCSINode, "fake", "a1", s.Socket), testClient(b, s.Socket, csi.RetryPolicy{}), nil)
	ctx := context.Background()
	if fp := f.run(ctx); !fp.Healthy {
		b.Fatal(fp.HealthDescription)
	}
	b.ReportAllocs()
	for b.Loop() {
		if fp := f.run(ctx); !fp.Healthy {
			b.Fatal(fp.HealthDescription)
		}
	}
}

// BenchmarkManagerPlugins measures the status snapshot `plugin status`
// takes, with 100 plugins of each type registered.
func BenchmarkManagerPlugins(b *testing.B) {
	reg, err := dynamic.New(dynamic.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Shutdown()
	s := csitest.Serve(b, csitest.NewFakePlugin(), "")
	m, err := NewManager(ManagerConfig{Registry: reg, Logger: hclog.NewNullLogger(), FingerprintInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	for i := range 100 {
		for _, typ := range followed {
			if err := reg.Register(csitest.Info(typ, fmt.Sprintf("p%03d", i), "a1", s.Socket)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := m.Start(); err != nil {
		b.Fatal(err)
	}
	if err := m.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(m.Plugins()); n != 100 {
			b.Fatalf("%d plugins", n)
		}
	}
}
