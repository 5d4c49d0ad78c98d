package apiserver

import (
	"github.com/pluginhost/pluginhost/host/jobspec"
)

// parseJob is ServerConfig.ParseJob's default: the same parser `job validate`
// runs locally, so the two never disagree about a file.
func parseJob(src []byte, filename string) (*jobspec.Job, error) {
	return jobspec.Parse(src, filename)
}
