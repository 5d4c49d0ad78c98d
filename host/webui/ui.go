package webui

import (
	"bytes"
	"compress/gzip"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is sent with every answer of the UI: scripts,
// styles, images and requests of this origin only, nothing framed, no
// plugins, no <base>, and forms only to this origin.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one asset, with its gzipped form.
type file struct {
	name, ctype string
	raw, gz     []byte
}

// load reads the embedded assets and gzips each once.
func load() map[string]*file {
	files := map[string]*file{}
	// The tree is embedded: reading it cannot fail, and the tests serve
	// every asset.
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		name := strings.TrimPrefix(p, "assets/")
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		files[name] = &file{name: name, ctype: ctype, raw: raw, gz: b.Bytes()}
		return nil
	})
	return files
}

// Handler serves the UI: /ui/assets/<name> from the embedded assets, every
// other path under /ui/ the page (index.html). Assets are sent gzipped to
// browsers that take it.
func Handler() http.Handler {
	files := load()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		name, isAsset := strings.CutPrefix(r.URL.Path, "/ui/assets/")
		f := files["index.html"]
		if isAsset {
			f = files[name]
			if f == nil || name == "index.html" {
				http.NotFound(w, r)
				return
			}
		}
		// The page is small and must follow the binary: no caching of it.
		// Assets are revalidated too (no hashes in their names).
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Type", f.ctype)
		h.Add("Vary", "Accept-Encoding")
		body := f.raw
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.Set("Content-Encoding", "gzip")
			body = f.gz
		}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}

// Size is the assets' total size, raw and gzipped: the figure the UI's
// budget is about (300 KB gzipped).
func Size() (raw, gzipped int) {
	for _, f := range load() {
		raw += len(f.raw)
		gzipped += len(f.gz)
	}
	return raw, gzipped
}
