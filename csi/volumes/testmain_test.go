package volumes

import (
	"os"
	"testing"

	"github.com/pluginhost/pluginhost/internal/testbin"
)

// TestMain removes the binaries testbin built for these tests.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }
