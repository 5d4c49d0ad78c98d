package csi

import (
	"context"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
)

// BenchmarkClientProbe measures one wrapped unary call over a real unix
// socket: the per-call cost the wrapper adds to gRPC.
func BenchmarkClientProbe(b *testing.B) {
	s := csitest.Serve(b, csitest.NewFakePlugin(), "")
	c := testClient(b, s.Socket, RetryPolicy{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Probe(ctx, &csipb.ProbeRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}
