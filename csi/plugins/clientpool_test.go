package plugins

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pluginhost/pluginhost/csi"
	"github.com/pluginhost/pluginhost/csi/internal/csitest"
	"github.com/pluginhost/pluginhost/dynamic"
)

func TestClientPoolSharesPerSocket(t *testing.T) {
	p := newClientPool(csi.ClientConfig{}, hclog.NewNullLogger())
	a, relA, err := p.acquire("/run/x/csi.sock")
	if err != nil {
		t.Fatal(err)
	}
	b, relB, err := p.acquire("/run/x/csi.sock")
	if err != nil {
		t.Fatal(err)
	}
	c, relC, err := p.acquire("/run/y/csi.sock")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a == c {
		t.Fatalf("clients: same socket %p %p, other socket %p", a, b, c)
	}
	relA()
	relA() // a second release of the same lease changes nothing
	if got := p.clients["/run/x/csi.sock"]; got == nil || got.refs != 1 {
		t.Fatalf("after one release: %+v", got)
	}
	relB()
	relC()
	if len(p.clients) != 0 {
		t.Fatalf("clients left after every release: %d", len(p.clients))
	}
	d, relD, err := p.acquire("/run/x/csi.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer relD()
	if d == a {
		t.Fatal("a closed client was handed out again")
	}
	long := "/" + strings.Repeat("s", dynamic.MaxSocketPathLen) + ".sock"
	if _, release, err := p.acquire(long); err == nil {
		t.Fatal("a socket path over the limit was accepted")
	} else {
		release() // a no-op, but callers may call it unconditionally
	}
	if _, ok := p.clients[long]; ok {
		t.Fatal("a failed acquire left an entry")
	}
}

// countingConn counts the calls made through a lent connection.
type countingConn struct {
	grpc.ClientConnInterface
	calls atomic.Int64
}

func (c *countingConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	c.calls.Add(1)
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

// A lent connection is what clients for its socket use, and stays the
// lender's: releasing the client leaves it open. After the loan is
// withdrawn, new clients dial their own.
func TestClientPoolUsesLentConnection(t *testing.T) {
	s := csitest.Serve(t, csitest.NewFakePlugin(), "")
	conn, err := grpc.NewClient("unix://"+s.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// owner is the lender's own client over the connection it lends.
	owner, err := csi.NewClient(csi.ClientConfig{Endpoint: "unix://" + s.Socket, Conn: conn})
	if err != nil {
		t.Fatal(err)
	}
	lent := &countingConn{ClientConnInterface: conn}
	p := newClientPool(csi.ClientConfig{}, hclog.NewNullLogger())
	withdraw := p.lend(s.Socket, lent)

	c, release, err := p.acquire(s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Probe(t.Context(), &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("Probe over the lent connection: %v", err)
	}
	if n := lent.calls.Load(); n != 1 {
		t.Fatalf("%d calls through the lent connection, want 1", n)
	}
	release()
	if _, err := owner.Probe(t.Context(), &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("the lender's connection after the pool released it: %v", err)
	}

	withdraw()
	withdraw() // idempotent
	c, release, err = p.acquire(s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := c.Probe(t.Context(), &csipb.ProbeRequest{}); err != nil {
		t.Fatalf("Probe after the loan ended: %v", err)
	}
	if n := lent.calls.Load(); n != 1 {
		t.Fatalf("a client made after the withdrawal used the lent connection (%d calls)", n)
	}
}
