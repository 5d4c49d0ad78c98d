package apiserver

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Request input: path IDs, query flags and JSON bodies, each checked so that
// a mistake comes back as a *FieldError naming the field.

// maxIDLen bounds path IDs: nothing legitimate is longer, and it keeps
// garbage out of logs and backend lookups.
const maxIDLen = 256

// pathID returns the {id} path value, checked.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	switch {
	case strings.TrimSpace(id) == "":
		return "", fieldErrorf("id", "is empty")
	case len(id) > maxIDLen:
		return "", fieldErrorf("id", "is %d bytes long, over the %d-byte limit", len(id), maxIDLen)
	case strings.ContainsFunc(id, func(c rune) bool { return c < 0x20 || c == 0x7f }):
		return "", fieldErrorf("id", "contains control characters")
	}
	return id, nil
}

// boolQuery parses an optional boolean query parameter; absent is false and
// an empty value (?follow) is true, as with Nomad.
func boolQuery(r *http.Request, name string) (bool, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return false, nil
	}
	v := q.Get(name)
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fieldErrorf(name, "%q is not a boolean (want true or false)", v)
	}
	return b, nil
}

// decodeBody reads one JSON value, strictly: unknown fields and trailing
// data are errors that name what was wrong, so typos do not pass silently.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var ute *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &mbe):
			return err
		case errors.Is(err, io.EOF):
			return fieldErrorf("body", "is empty; want a JSON object")
		case errors.As(err, &ute):
			field := ute.Field
			if field == "" {
				// The body itself is of the wrong JSON type.
				field = "body"
			}
			return fieldErrorf(field, "want %s, got JSON %s", ute.Type, ute.Value)
		case errors.As(err, &se):
			return fieldErrorf("body", "invalid JSON at byte %d: %v", se.Offset, err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			if f == "" {
				return fieldErrorf("body", "unknown field \"\"")
			}
			return fieldErrorf(f, "unknown field")
		default:
			return fieldErrorf("body", "%v", err)
		}
	}
	if dec.More() {
		return fieldErrorf("body", "trailing data after the JSON object")
	}
	return nil
}
