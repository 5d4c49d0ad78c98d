package csi

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/dynamic"
)

func TestSocketPath(t *testing.T) {
	long := "/" + strings.Repeat("d", dynamic.MaxSocketPathLen) + "/csi.sock"
	for _, tc := range []struct {
		in, want, errPart string
	}{
		{in: "unix:///run/p/csi.sock", want: "/run/p/csi.sock"},
		{in: "unix:/run/p/csi.sock", want: "/run/p/csi.sock"},
		{in: "/run/p/csi.sock", want: "/run/p/csi.sock"},
		{in: "rel/csi.sock", want: "rel/csi.sock"},
		{in: "", errPart: "empty"},
		{in: "unix://", errPart: "empty"},
		{in: "tcp://127.0.0.1:9000", errPart: "only unix"},
		{in: "/a\x00b", errPart: "NUL"},
		{in: long, errPart: strconv.Itoa(dynamic.MaxSocketPathLen) + "-byte limit"},
	} {
		got, err := SocketPath(tc.in)
		if tc.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("SocketPath(%q) = %q, %v; want error with %q", tc.in, got, err, tc.errPart)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SocketPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// Exactly at the limit is fine, one byte over is not, and the error
	// names the path so the user can find what to shorten.
	atLimit := "/" + strings.Repeat("x", dynamic.MaxSocketPathLen-1)
	if _, err := SocketPath(atLimit); err != nil {
		t.Errorf("path of exactly %d bytes: %v", dynamic.MaxSocketPathLen, err)
	}
	_, err := NewClient(ClientConfig{Endpoint: atLimit + "y"})
	if !errors.Is(err, ErrSocketPathTooLong) || !strings.Contains(err.Error(), atLimit+"y") {
		t.Errorf("NewClient over the limit: %v", err)
	}
}

// FuzzSocketPath: any endpoint string gives a path within the limit or an
// error, never a panic.
func FuzzSocketPath(f *testing.F) {
	for _, s := range []string{"unix:///run/csi.sock", "unix:/x", "/x", "", "unix://", "tcp://h:1", strings.Repeat("a", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, endpoint string) {
		p, err := SocketPath(endpoint)
		if err != nil {
			if p != "" {
				t.Fatalf("error with a path: %q, %v", p, err)
			}
			return
		}
		if p == "" || len(p) > dynamic.MaxSocketPathLen || strings.ContainsRune(p, 0) {
			t.Fatalf("SocketPath(%q) = %q", endpoint, p)
		}
		if !strings.HasSuffix(endpoint, p) {
			t.Fatalf("SocketPath(%q) = %q is not the endpoint's path", endpoint, p)
		}
	})
}
