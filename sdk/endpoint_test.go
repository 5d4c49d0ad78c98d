package sdk

import (
	"flag"
	"strings"
	"testing"
)

func TestParseEndpoint(t *testing.T) {
	long := "/" + strings.Repeat("a", MaxSocketPath)
	cases := []struct{ in, want, err string }{
		{"unix:///run/csi/csi.sock", "/run/csi/csi.sock", ""},
		{"unix:/run/csi/csi.sock", "/run/csi/csi.sock", ""},
		{"unix://rel/csi.sock", "rel/csi.sock", ""},
		{"/run/csi/csi.sock", "/run/csi/csi.sock", ""},
		{" unix:///a.sock\n", "/a.sock", ""},
		{"", "", "empty CSI endpoint"},
		{"unix://", "", "has no path"},
		{"tcp://127.0.0.1:10000", "", "only unix sockets"},
		{long, "", "the limit is 107"},
	}
	for _, c := range cases {
		got, err := ParseEndpoint(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseEndpoint(%q) = %q, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseEndpoint(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"unix:///a.sock", "unix:/a", "a", "tcp://x", "unix://", ":", "::/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseEndpoint(in)
		if err == nil && (got == "" || len(got) > MaxSocketPath) {
			t.Fatalf("ParseEndpoint(%q) = %q without error", in, got)
		}
	})
}

func TestEndpointFlag(t *testing.T) {
	t.Setenv(EnvCSIEndpoint, "unix:///from/env.sock")
	fs := flag.NewFlagSet("p", flag.ContinueOnError)
	ep := EndpointFlag(fs)
	if err := fs.Parse(nil); err != nil || *ep != "unix:///from/env.sock" {
		t.Fatalf("default = %q, %v; want $CSI_ENDPOINT", *ep, err)
	}
	fs = flag.NewFlagSet("p", flag.ContinueOnError)
	ep = EndpointFlag(fs)
	if err := fs.Parse([]string{"--endpoint=/x.sock"}); err != nil || *ep != "/x.sock" {
		t.Fatalf("flag = %q, %v", *ep, err)
	}
}
