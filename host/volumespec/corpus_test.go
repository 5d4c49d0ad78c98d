package volumespec

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict/corpustest"
)

// The bad corpus is split by the rules a file is parsed with: testdata/bad
// with the rules common to create and register, bad/create and
// bad/register with those of one operation too.
var badCorpora = []struct {
	dir string
	op  Op
}{
	{filepath.Join("testdata", "bad"), 0},
	{filepath.Join("testdata", "bad", "create"), OpCreate},
	{filepath.Join("testdata", "bad", "register"), OpRegister},
}

func parseFileOp(path string, op Op) (*Volume, error) {
	if op == 0 {
		return ParseFile(path)
	}
	return parseFile(path, op)
}

func TestBadVolumeFiles(t *testing.T) {
	for _, c := range badCorpora {
		t.Run(filepath.Base(c.dir), func(t *testing.T) {
			corpustest.CheckBadCorpus(t, c.dir, func(path string) error {
				v, err := parseFileOp(path, c.op)
				if err == nil {
					return fmt.Errorf("parsed without error: %+v", v)
				}
				return err
			})
		})
	}
}
