package config

import (
	"strings"
	"testing"
)

// pids_limit defaults to Podman's 2048, in a file and with -dev; 0 lifts
// it; a negative or oversized one is refused where it is written, in a
// file as in a Config built in code.
func TestPidsLimit(t *testing.T) {
	for src, want := range map[string]int{
		"":                       DefaultPidsLimit,
		"pids_limit = 0\n":       0,
		"pids_limit = 64\n":      64,
		"pids_limit = 4194304\n": MaxPidsLimit,
	} {
		c, err := Parse([]byte("data_dir = \"/d\"\n"+src), "p.hcl")
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if c.Containment.PidsLimit != want {
			t.Errorf("%q: pids_limit %d, want %d", src, c.Containment.PidsLimit, want)
		}
	}
	if got := Dev().Containment.PidsLimit; got != DefaultPidsLimit {
		t.Errorf("-dev pids_limit %d, want %d", got, DefaultPidsLimit)
	}
	for src, want := range map[string]string{
		"pids_limit = -1\n":      "p.hcl:2:14: Invalid pids_limit",
		"pids_limit = 4194305\n": "may be at most 4194304",
		"pids_limit = 1.5\n":     "whole number",
	} {
		_, err := Parse([]byte("data_dir = \"/d\"\n"+src), "p.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", src, err, want)
		}
	}
	c := Dev()
	c.DataDir = "/d"
	c.Containment.PidsLimit = -5
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "pids_limit must be 0 (no limit)") {
		t.Errorf("Validate with pids_limit -5: %v", err)
	}
}
