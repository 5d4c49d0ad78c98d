//go:build !portable

package testbins

// buildTags: see tags_portable.go.
const buildTags = ""
