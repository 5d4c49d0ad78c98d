package sdk_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/pluginhost/pluginhost/sdk/internal/testbins"
)

// bins holds the test binaries, built once by TestMain.
var bins *testbins.Bins

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	b, err := testbins.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(b.Dir)
	bins = b
	return m.Run()
}
