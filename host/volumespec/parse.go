package volumespec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

// MaxFileSize bounds what ParseFile reads. Volume files are well under a
// kilobyte; anything near this is a wrong file, not a volume.
const MaxFileSize = 1 << 20

// ParseFile reads, parses and validates the volume file at path with the
// rules common to create and register. Parse and validation errors are a
// *hclstrict.DiagnosticsError; I/O errors are wrapped os errors.
func ParseFile(path string) (*Volume, error) { return parseFile(path, 0) }

// Parse parses and validates one volume file held in memory with the rules
// common to create and register; filename names the file in diagnostics
// and, ending in ".json", selects JSON syntax (as does content starting with
// '{'). On failure the error is a *hclstrict.DiagnosticsError listing every
// problem found, each with its location.
func Parse(src []byte, filename string) (*Volume, error) { return parse(src, filename, 0) }

// ParseFor is Parse plus the rules of op.
func ParseFor(src []byte, filename string, op Op) (*Volume, error) { return parse(src, filename, op) }

func parseFile(path string, op Op) (*Volume, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open volume file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat volume file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("volume file %s: not a regular file", path)
	}
	// One byte more than the limit is enough for parse to refuse the file
	// where it crosses it.
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read volume file: %w", err)
	}
	// Diagnostics name the file as the user wrote it, which is what their
	// terminal and editor can jump to.
	return parse(src, path, op)
}

// parse is Parse with op's rules too; op 0 is "either operation".
func parse(src []byte, filename string, op Op) (*Volume, error) {
	v, d, files := decode(src, filename)
	if v != nil {
		Canonicalize(v)
		ps := validate(v)
		if op != 0 {
			ps = append(ps, validateOp(v, op)...)
		}
		d.Place(ps, filename)
	}
	if err := hclstrict.NewError(d.Diags(), files); err != nil {
		return nil, err
	}
	if v == nil {
		// Unreachable: decode only skips decoding after a limit or a
		// syntax error, which it reports.
		return nil, fmt.Errorf("volume file %s: no volume", filename)
	}
	return v, nil
}

// decode parses src in the syntax it is written in and decodes the volume
// without Validate's rules.
func decode(src []byte, filename string) (*Volume, *decoder, map[string]*hcl.File) {
	json := isJSON(src, filename)
	limits := hclstrict.SourceLimits{Kind: "volume file", MaxBytes: MaxFileSize}
	if json {
		limits.Syntax = hclstrict.SyntaxJSON
	}
	// hcl's parsers, JSON's too, recurse without a bound of their own.
	var de *hclstrict.DiagnosticsError
	if err := hclstrict.CheckSource(src, filename, limits); errors.As(err, &de) {
		d := newDecoder(json)
		d.Add(de.Diags)
		return nil, d, de.Files
	}
	p := hclparse.NewParser()
	var (
		file  *hcl.File
		diags hcl.Diagnostics
	)
	if json {
		file, diags = p.ParseJSON(src, filename)
	} else {
		file, diags = p.ParseHCL(src, filename)
	}
	d := newDecoder(json)
	d.Add(diags)
	var v *Volume
	// After a syntax error the body is a best-effort partial tree; decoding
	// it would add confusing follow-on errors about keys that are fine.
	if file != nil && !diags.HasErrors() {
		v = decodeVolume(d, file.Body, rootRange(file, json))
	}
	return v, d, p.Files()
}

// isJSON tells the syntax apart by the ".json" extension, or by content
// that starts like an object, which no valid HCL volume file does (Nomad's
// HCL1 parser tells them apart by content alone).
func isJSON(src []byte, filename string) bool {
	if strings.EqualFold(filepath.Ext(filename), ".json") {
		return true
	}
	rest := bytes.TrimLeft(bytes.TrimPrefix(src, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(rest) > 0 && rest[0] == '{'
}

// rootRange is where a file's missing keys are reported: the start of the
// file, or in JSON the root object's opening brace (hcl's JSON body points
// at the closing one, after everything the user wrote).
func rootRange(file *hcl.File, json bool) hcl.Range {
	rng := file.Body.MissingItemRange()
	if !json {
		return rng
	}
	pos := hcl.InitialPos
	for _, b := range file.Bytes {
		switch b {
		case '{':
			end := pos
			end.Column++
			end.Byte++
			return hcl.Range{Filename: rng.Filename, Start: pos, End: end}
		case '\n':
			pos.Line++
			pos.Column = 1
		default:
			// Only whitespace (and a byte order mark, which the JSON parser
			// refuses anyway) can come first; columns count bytes here.
			pos.Column++
		}
		pos.Byte++
	}
	return rng
}
