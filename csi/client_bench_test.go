package csi

import (
	"context"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// BenchmarkClientProbe measures one wrapped unary call over a real unix
// socket: the per-call cost the wrapper adds to gRPC.
func BenchmarkClientProbe(b *testing.B) {
	s := serve(b, newFakePlugin(), "")
	c := testClient(b, s.socket, RetryPolicy{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Probe(ctx, &csipb.ProbeRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}
