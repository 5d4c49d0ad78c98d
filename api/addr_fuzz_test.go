package api

import (
	"strings"
	"testing"
)

// FuzzParseAddr: any string either fails with an error or yields an address
// that round-trips, is loopback-only for TCP and fits sun_path for unix.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"unix:///run/ph.sock", "/tmp/x.sock", "127.0.0.1:4646", "http://localhost:1/",
		"[::1]:0", "0.0.0.0:80", "unix://", "http://", "::", "a:b:c", "unix:///" + strings.Repeat("x", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddr(s)
		if err != nil {
			return
		}
		switch a.Network {
		case "unix":
			if len(a.Address) > maxUnixPath || !strings.HasPrefix(a.Address, "/") {
				t.Fatalf("ParseAddr(%q) accepted unix path %q", s, a.Address)
			}
		case "tcp":
		default:
			t.Fatalf("ParseAddr(%q) network %q", s, a.Network)
		}
		b, err := ParseAddr(a.String())
		if err != nil || b != a {
			t.Fatalf("ParseAddr(%q) = %+v does not round-trip: %+v, %v", s, a, b, err)
		}
	})
}
