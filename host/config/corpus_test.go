package config

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict/corpustest"
)

func TestBadConfigFiles(t *testing.T) {
	corpustest.CheckBadCorpus(t, filepath.Join("testdata", "bad"), func(path string) error {
		c, err := ParseFile(path)
		if err == nil {
			return fmt.Errorf("parsed without error: %+v", c)
		}
		return err
	})
}
