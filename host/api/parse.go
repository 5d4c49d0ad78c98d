package api

import (
	"errors"
	"fmt"

	"github.com/pluginhost/pluginhost/host/jobspec"
)

// parseJob is ServerConfig.ParseJob's default.
//
// STUB(jobspec): host/jobspec's parser is being written in parallel; once
// jobspec.Parse(src []byte, filename string) (*jobspec.Job, error) exists,
// this body becomes `return jobspec.Parse(src, filename)`.
func parseJob(src []byte, filename string) (*jobspec.Job, error) {
	return nil, fmt.Errorf("%s: %w", filename, errParserMissing)
}

var errParserMissing = errors.New("this build has no job file parser; submit a parsed job instead")
