// Package examples holds the example job files. They are documentation, and
// the demo job is also what `pluginhost agent -dev` runs.
package examples

import _ "embed"

// Demo is demo.hcl: mockcsi as a monolith CSI plugin under go_plugin.
//
//go:embed demo.hcl
var Demo []byte
