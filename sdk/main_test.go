package sdk_test

import (
	"os"
	"testing"

	"github.com/pluginhost/pluginhost/sdk/internal/testbins"
)

// bins holds the test binaries, built once by TestMain.
var bins *testbins.Bins

func TestMain(m *testing.M) { os.Exit(testbins.Main(m, &bins)) }
