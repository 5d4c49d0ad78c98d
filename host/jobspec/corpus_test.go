package jobspec

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict/corpustest"
)

func TestBadJobFiles(t *testing.T) {
	corpustest.CheckBadCorpus(t, filepath.Join("testdata", "bad"), func(path string) error {
		job, err := ParseFile(path)
		if err == nil {
			return fmt.Errorf("parsed without error: %+v", job)
		}
		return err
	})
}
