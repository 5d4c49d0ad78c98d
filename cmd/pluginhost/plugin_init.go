package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"text/template"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The code generators `make generate` pins, here and in the skeleton's
// Makefile. TestPluginInitVersionsMatchMakefile keeps them equal to this
// repository's Makefile, and `make generate` checks that the generated code
// plugin init writes is byte for byte what buf makes with them.
const (
	bufVersion             = "v1.75.0"
	protocGenGoVersion     = "v1.36.12"
	protocGenGoGRPCVersion = "v1.5.1"
)

// skeletonGoVersion is the go directive of the skeleton's go.mod: this
// module's, which a module requiring it must have at least.
const skeletonGoVersion = "1.26.0"

// pluginhostModule is the module the skeleton requires.
const pluginhostModule = "github.com/pluginhost/pluginhost"

// develVersion is the pseudo-version required when this binary knows no
// released version of its own module; a replace directive then says where
// the module is.
const develVersion = "v0.0.0-00010101000000-000000000000"

//go:embed plugintmpl
var pluginTemplates embed.FS

// pluginNameRE: the name is the plugin type, the binary's and the Go
// package's name and part of the proto package, so it takes the alphabet
// all of them accept.
var pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,30}$`)

// PluginInitCommand writes a module skeleton for a non-CSI sdk plugin.
type PluginInitCommand struct{ *Meta }

func (c *PluginInitCommand) Synopsis() string {
	return "Write a Go module skeleton for a plugin that is not CSI"
}

func (c *PluginInitCommand) Help() string {
	return helpText(`
Usage: pluginhost plugin init [-module PATH] [-dir DIR] NAME

  Write a Go module for a pluginhost plugin of type NAME, built with the
  sdk: its gRPC service (.proto, with the generated Go code), buf configs
  and a Makefile whose 'make generate' regenerates that code with pinned
  generator versions, main.go, a test using sdktest, and a job file.
  After 'go mod tidy' it builds, and 'go test ./...' passes, as written.
  Nothing existing is overwritten.

  NAME is lower-case letters and digits, starting with a letter: it is the
  plugin type, the binary, and the Go and proto package names.

Options:

  -module=<path>
    The module path. Default: example.com/NAME.

  -dir=<dir>
    Where to write the module. Default: ./NAME. It must not exist, or be
    empty.
`)
}

// skeleton is what the templates are filled with.
type skeleton struct {
	Name, Module string
	// Binary is where `make build` puts the plugin: the job names it by
	// its absolute path, so that no other binary of the same name on the
	// agent's PATH runs instead (a dev agent's bin/ holds go-plugin's
	// example greeter).
	Binary                                                 string
	BufVersion, ProtocGenGoVersion, ProtocGenGoGRPCVersion string
	RawDesc                                                string
}

func (c *PluginInitCommand) Run(args []string) int {
	var module, dir string
	fs := c.flagSet("plugin init", false, false)
	fs.StringVar(&module, "module", "", "")
	fs.StringVar(&dir, "dir", "", "")
	if !c.parse(fs, args) {
		return 1
	}
	if fs.NArg() != 1 {
		return c.usageError("plugin init", "This command takes one argument: the plugin's name")
	}
	name := fs.Arg(0)
	if !pluginNameRE.MatchString(name) {
		return c.usageError("plugin init", fmt.Sprintf("Invalid name %q: lower-case letters and digits, starting with a letter, at most 31 (it is the plugin type, the binary and the Go and proto package names)", name))
	}
	if module == "" {
		module = "example.com/" + name
	}
	if dir == "" {
		dir = name
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return 1
	}
	files, err := renderSkeleton(name, module, filepath.Join(abs, "bin", name))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error rendering the skeleton: %v", err))
		return 1
	}
	if err := writeSkeleton(dir, files); err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing %s: %v", dir, err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("Plugin %q written to %s (module %s). Next:\n\n  cd %s\n  go mod tidy\n  go test ./...\n  make build && pluginhost job run %s.hcl",
		name, dir, module, dir, name))
	if v := ownVersion(); v == develVersion {
		// The repository's go.mod requires its api module (a module of
		// its own) through a replace, which only a checkout's own builds
		// follow: go mod tidy needs it replaced here too.
		c.Ui.Warn(fmt.Sprintf("\nThis pluginhost binary was not built from a released version, so go.mod requires %s %s: point it at your checkout first:\n\n  go mod edit -replace %s=/path/to/pluginhost -replace %s/api=/path/to/pluginhost/api",
			pluginhostModule, develVersion, pluginhostModule, pluginhostModule))
	}
	return 0
}

// ownVersion is the version of the module this binary was built from, as
// go.mod should require it.
func ownVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && strings.HasPrefix(bi.Main.Version, "v") {
		return bi.Main.Version
	}
	return develVersion
}

// depVersion is the version of a module linked into this binary; the
// skeleton requires the same, which is what the sdk was tested with.
func depVersion(path, fallback string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return fallback
}

// renderSkeleton returns the skeleton's files by relative path.
func renderSkeleton(name, module, binary string) (map[string][]byte, error) {
	raw, err := skeletonRawDesc(name, module)
	if err != nil {
		return nil, err
	}
	data := skeleton{
		Name: name, Module: module, Binary: binary,
		BufVersion: bufVersion, ProtocGenGoVersion: protocGenGoVersion, ProtocGenGoGRPCVersion: protocGenGoGRPCVersion,
		RawDesc: raw,
	}
	pb := name + "pb"
	out := map[string][]byte{
		"go.mod": fmt.Appendf(nil, "module %s\n\ngo %s\n\nrequire (\n\t%s %s\n\tgoogle.golang.org/grpc %s\n\tgoogle.golang.org/protobuf %s\n)\n",
			module, skeletonGoVersion, pluginhostModule, ownVersion(),
			depVersion("google.golang.org/grpc", "v1.85.0"), depVersion("google.golang.org/protobuf", "v1.36.12")),
	}
	for tmpl, path := range map[string]string{
		"proto.tmpl":        filepath.Join(pb, name+".proto"),
		"pb.go.tmpl":        filepath.Join(pb, name+".pb.go"),
		"grpc.pb.go.tmpl":   filepath.Join(pb, name+"_grpc.pb.go"),
		"buf.yaml.tmpl":     "buf.yaml",
		"buf.gen.yaml.tmpl": "buf.gen.yaml",
		"Makefile.tmpl":     "Makefile",
		"main.go.tmpl":      "main.go",
		"server.go.tmpl":    "server.go",
		"main_test.go.tmpl": "main_test.go",
		"job.hcl.tmpl":      name + ".hcl",
		"README.md.tmpl":    "README.md",
	} {
		src, err := pluginTemplates.ReadFile("plugintmpl/" + tmpl)
		if err != nil {
			return nil, err
		}
		t, err := template.New(tmpl).Delims("[[", "]]").Option("missingkey=error").Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tmpl, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("%s: %w", tmpl, err)
		}
		body := b.Bytes()
		if strings.HasSuffix(path, ".go") {
			// The generators gofmt their output; so does this.
			if body, err = format.Source(body); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		out[path] = body
	}
	return out, nil
}

// writeSkeleton writes files under dir, which must not exist or be empty:
// a skeleton never overwrites anyone's work.
func writeSkeleton(dir string, files map[string][]byte) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty; not writing into it", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for path, body := range files {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(body); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// skeletonRawDesc is the skeleton .proto's descriptor as protoc-gen-go
// embeds it in the .pb.go: the FileDescriptorProto that buf hands the
// generator, marshalled deterministically, written as a string constant
// split after every 0x0a byte. It is built here rather than copied because
// the name and module are in it; `make generate` checks the result against
// buf's. It must describe proto.tmpl exactly.
func skeletonRawDesc(name, module string) (string, error) {
	return kvRawDesc(name+"pb/"+name+".proto", name+".v1", module+"/"+name+"pb")
}

// kvRawDesc is the raw descriptor of the KV service's .proto at path, with
// proto package pkg and go_package goPkg. plugins/kv's own .proto is the
// same but for the names, so its generated kv.pb.go checks this function
// against protoc-gen-go (TestKVRawDescIsProtocGenGos).
func kvRawDesc(path, pkg, goPkg string) (string, error) {
	field := func(n string, num int32, typ descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{
			Name: proto.String(n), Number: proto.Int32(num), JsonName: proto.String(n),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: typ.Enum(),
		}
	}
	msg := func(n string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{Name: proto.String(n), Field: fields}
	}
	method := func(n string) *descriptorpb.MethodDescriptorProto {
		return &descriptorpb.MethodDescriptorProto{
			Name:       proto.String(n),
			InputType:  proto.String("." + pkg + "." + n + "Request"),
			OutputType: proto.String("." + pkg + "." + n + "Response"),
		}
	}
	const (
		str   = descriptorpb.FieldDescriptorProto_TYPE_STRING
		byts  = descriptorpb.FieldDescriptorProto_TYPE_BYTES
		boole = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	)
	fd := &descriptorpb.FileDescriptorProto{
		Name:    proto.String(path),
		Package: proto.String(pkg),
		MessageType: []*descriptorpb.DescriptorProto{
			msg("PutRequest", field("key", 1, str), field("value", 2, byts)),
			msg("PutResponse", field("instance", 1, str)),
			msg("GetRequest", field("key", 1, str)),
			msg("GetResponse", field("value", 1, byts), field("found", 2, boole), field("instance", 3, str)),
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("KV"), Method: []*descriptorpb.MethodDescriptorProto{method("Put"), method("Get")},
		}},
		Options: &descriptorpb.FileOptions{GoPackage: proto.String(goPkg)},
		Syntax:  proto.String("proto3"),
	}
	// Refuse a descriptor the protobuf runtime would refuse at init.
	if _, err := protodesc.NewFile(fd, nil); err != nil {
		return "", fmt.Errorf("skeleton descriptor: %w", err)
	}
	b, err := proto.MarshalOptions{AllowPartial: true, Deterministic: true}.Marshal(fd)
	if err != nil {
		return "", fmt.Errorf("skeleton descriptor: %w", err)
	}
	var s strings.Builder
	s.WriteString(`""`)
	for _, line := range bytes.SplitAfter(b, []byte{'\n'}) {
		fmt.Fprintf(&s, " +\n%q", line)
	}
	return s.String(), nil
}
