package jobspec

import "github.com/pluginhost/pluginhost/host/jobspec/hclstrict"

// DecodeUnvalidated decodes a job file without Validate's rules, for tests
// that submit the same job by another path. The error holds only the shape
// diagnostics (size, nesting, syntax, unknown keys, types, missing required
// keys).
func DecodeUnvalidated(src []byte, filename string) (*Job, error) {
	if err := checkSource(src, filename); err != nil {
		return nil, err
	}
	job, d, files := decode(src, filename)
	if err := hclstrict.NewError(d.Diags(), files); err != nil {
		return nil, err
	}
	return job, nil
}
