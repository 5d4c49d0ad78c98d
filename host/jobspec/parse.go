package jobspec

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// MaxFileSize bounds a job file. Job files are a few kilobytes (the
// repository's largest is 2.5 KB); a larger file is a mistake (a binary
// passed by accident, a generator gone wrong), not a job. Parsing one this
// size takes about 60 ms.
const MaxFileSize = 1 << 20

// ParseFile reads, parses and validates the job file at path. Job.SourcePath
// is the file's absolute path. Parse and validation errors are a
// *hclstrict.DiagnosticsError; I/O errors are wrapped os errors.
func ParseFile(path string) (*Job, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("job file %s: %w", path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("open job file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat job file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("job file %s: not a regular file", path)
	}
	// One byte more than the limit is enough for Parse to refuse the file
	// where it crosses it.
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read job file: %w", err)
	}
	// Diagnostics name the file as the user wrote it: that is the text
	// their terminal and editor can jump to.
	job, err := Parse(src, path)
	if err != nil {
		return nil, err
	}
	job.SourcePath = abs
	return job, nil
}

// Parse parses and validates one job file held in memory; filename is used
// in diagnostics only. On failure the error is a *hclstrict.DiagnosticsError
// listing every problem found, each with its location.
func Parse(src []byte, filename string) (*Job, error) {
	if err := checkSource(src, filename); err != nil {
		return nil, err
	}
	job, d, files := decode(src, filename)
	if job != nil {
		d.Place(validate(job), filename)
	}
	if err := hclstrict.NewError(d.Diags(), files); err != nil {
		return nil, err
	}
	if job == nil {
		// Unreachable: decodeFile reports why whenever it returns nil.
		return nil, fmt.Errorf("job file %s: no job", filename)
	}
	return job, nil
}

// checkSource refuses a file too large or too deep to parse safely.
func checkSource(src []byte, filename string) error {
	return hclstrict.CheckSource(src, filename, hclstrict.SourceLimits{Kind: "job file", MaxBytes: MaxFileSize})
}

// decode parses src and decodes its job without the semantic rules of
// Validate: the job, if any, is only as good as its HCL shape. The decoder
// holds the shape diagnostics and where each field was written.
func decode(src []byte, filename string) (*Job, *decoder, map[string]*hcl.File) {
	p := hclparse.NewParser()
	file, diags := p.ParseHCL(src, filename)
	d := newDecoder()
	d.Add(diags)
	var job *Job
	// After a syntax error the body is a best-effort partial tree; decoding
	// it would add confusing follow-on errors about keys that are fine.
	if file != nil && !diags.HasErrors() {
		job = decodeFile(d, file.Body, filename)
	}
	return job, d, p.Files()
}

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "job", LabelNames: []string{"id"}}},
}

func decodeFile(d *decoder, body hcl.Body, filename string) *Job {
	before := d.Count()
	content := d.Content(body, fileSchema)
	if len(content.Blocks) == 0 {
		if d.Count() > before {
			return nil
		}
		start := hcl.Pos{Line: 1, Column: 1, Byte: 0}
		d.Errorf(hcl.Range{Filename: filename, Start: start, End: start}, "Missing job block",
			"A job file holds exactly one `job \"<id>\" { ... }` block.")
		return nil
	}
	for _, b := range content.Blocks[1:] {
		d.Errorf(b.DefRange, "Duplicate job block", "A job file holds exactly one job; the first is at %s.", content.Blocks[0].DefRange)
	}
	return decodeJob(d, content.Blocks[0])
}
