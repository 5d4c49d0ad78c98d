package csi

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pluginhost/pluginhost/dynamic"
)

func TestClientPoolSharesPerSocket(t *testing.T) {
	p := newClientPool(ClientConfig{}, hclog.NewNullLogger())
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
