package apiserver

import (
	"strings"
	"testing"

	"github.com/pluginhost/pluginhost/api"
	"github.com/pluginhost/pluginhost/dynamic"
)

// Package api copies sun_path's limit rather than import dynamic: the two
// must agree, or the agent would accept a socket path the client refuses.
func TestAddrLimitMatchesDynamic(t *testing.T) {
	at := "/" + strings.Repeat("s", dynamic.MaxSocketPathLen-1)
	if _, err := api.ParseAddr("unix://" + at); err != nil {
		t.Errorf("a path of dynamic.MaxSocketPathLen (%d) bytes: %v", len(at), err)
	}
	if _, err := api.ParseAddr("unix://" + at + "s"); err == nil {
		t.Errorf("a path of %d bytes accepted", len(at)+1)
	}
}
