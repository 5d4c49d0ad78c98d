package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestConsumerDeps: a program that only calls a hosted plugin links the Go
// client and the plugin's generated code, and none of the agent: no HCL,
// go-cty, Prometheus, bbolt, CSI spec or host/... package. Before the client
// left host/api, kvclient linked 399 packages; it links 354 now (most of
// them the standard library's, gRPC's and go-plugin's).
func TestConsumerDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	refused := []string{"github.com/hashicorp/hcl", "github.com/zclconf/go-cty", "github.com/prometheus/",
		"go.etcd.io/bbolt", "github.com/container-storage-interface/", "github.com/pluginhost/pluginhost/host/"}
	for dep := range strings.FieldsSeq(string(out)) {
		for _, r := range refused {
			if strings.HasPrefix(dep, r) {
				t.Errorf("kvclient links %s", dep)
			}
		}
	}
}
