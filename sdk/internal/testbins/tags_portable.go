//go:build portable

package testbins

// buildTags gives the test binaries the build tags of the tests that run
// them, so that `go test -tags portable` tests plugins built with the
// portable code (the stdio macOS and Windows get).
const buildTags = "portable"
