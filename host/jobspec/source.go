package jobspec

import "github.com/pluginhost/pluginhost/host/jobspec/hclstrict"

// decoder is the HCL decoder of job files. Validate names problems by Job
// field path; the hclstrict.Fields record lets Parse place each one where
// the user wrote it.
type decoder struct {
	*hclstrict.Fields
}

func newDecoder() *decoder { return &decoder{Fields: hclstrict.NewFields()} }
