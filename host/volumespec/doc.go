// Package volumespec parses CSI volume specifications: the file that
// `volume create FILE` and `volume register FILE` take, in Nomad's format,
// as HCL or JSON, strictly, like host/jobspec parses job files. A file
// accepted here is meant to be a valid Nomad volume specification with the
// same meaning; the exceptions, both ways, are listed below.
//
// # Pipeline
//
// Parse picks the syntax (JSON for a ".json" name or content starting with
// '{', HCL otherwise), parses with hclparse, decodes by hand against one
// hcl.BodySchema per block through hclstrict, and validates. Both syntaxes
// go through the same decoder, so a JSON mistake is reported at its
// file:line:col with the source line quoted, as an HCL one is. All problems
// of a file come back together as one *hclstrict.DiagnosticsError; only
// after a syntax error is decoding skipped.
//
// As in jobspec, the decoder knows the file's shape (unknown keys, types,
// repeated blocks, missing keys) and where each Volume field was written;
// every other rule lives in Validate, which names problems by Go field path
// ("RequestedCapabilities[0].AccessMode"), and Parse reports each at the
// range written for that path or its closest enclosing field. An API body
// decoded into a Volume goes through Canonicalize and Validate and is
// refused in the same words.
//
// The same file serves create and register. Parse and Validate hold it to
// the rules common to both; ParseFor and ValidateFor add one operation's:
//
//	register  needs external_id; refuses snapshot_id and clone_id
//	create    refuses external_id (Nomad ignores it; writing it usually
//	          means the user wanted register, so it is an error naming
//	          the key)
//
// # Keys
//
//	id               ID (required) letters, digits, '.', '_', '-'; at most
//	                 128; not "." or ".."; a path element and map key
//	name             Name, default the id; the CSI CreateVolume name
//	type             Type (required), "csi" only
//	plugin_id        PluginID (required), jobspec.ValidPluginID
//	namespace        accepted only as "default" and not stored: Nomad's
//	                 examples write it, pluginhost has no namespaces
//	external_id      ExternalID (register)
//	snapshot_id, clone_id   SnapshotID, CloneID (create, at most one)
//	capacity_min, capacity_max   RequestedCapacityMin/Max in bytes,
//	                 max >= min when both are non-zero; see ParseBytes
//	capability {access_mode, attachment_mode}   RequestedCapabilities,
//	                 one or more, both keys required, no duplicates
//	mount_options {fs_type, mount_flags}   MountOptions, at most one; needs
//	                 a file-system capability
//	topology_request {required {topology {segments}} preferred {...}}
//	                 RequestedTopologies; each topology needs a segment
//	secrets, parameters, context   string maps; nil when absent
//
// Modes are jobspec's constants (single-node-reader-only,
// single-node-writer, multi-node-reader-only, multi-node-single-writer,
// multi-node-multi-writer; file-system, block-device).
//
// # HCL2 against Nomad's HCL1
//
// Nomad reads volume files with HCL1; pluginhost, like its job files, with
// HCL2. Two forms from Nomad's documentation are HCL1 only:
//
//	topology { segments { "rack" = "R1", "zone" = "a" } }
//
// quotes keys and puts two entries (and a nested block) on one line. Write
// it as `topology { segments = { rack = "R1", zone = "a" } }` or with one
// entry per line. Therefore every map (segments, secrets, parameters,
// context) is accepted both as a block of attributes and as a map
// attribute (`parameters = { "k" = "v" }`), but not both at once. In JSON
// a map is an object, or Nomad's own `[{...}]` form of one object.
//
// `required` and `preferred` may each be repeated; their topologies are
// concatenated, as Nomad does (its JSON form writes one `required` object
// per topology). Other blocks appear at most once.
//
// HCL2's JSON reads "${...}" in strings literally, while native syntax
// refuses any reference ("Variables not allowed"): volume files have no
// variables either way.
//
// # Where pluginhost is stricter than Nomad
//
// Unknown keys are errors; namespace must be "default"; the id alphabet
// above (which also rules out Nomad's per_alloc "[N]" suffixes for now);
// duplicate capability blocks; mount_options when no capability is
// file-system; an empty required/preferred block or topology; the
// create/register rules above; capacities must be whole bytes that fit an
// int64 and take no thousands separators ("1,000" is refused, go-humanize
// would read 1000).
//
// # Where pluginhost is more lenient
//
// A JSON property named "//" is HCL2's JSON comment and is ignored, also
// inside maps; Nomad's HCL1 would see a key. `segments = {...}` and the
// other map attributes are the HCL2 spelling of Nomad's blocks (above).
//
// # Test corpus
//
// testdata/bad holds malformed files checked with corpustest: each HCL file
// opens with `# want: LINE:COL: Summary` lines. JSON cannot hold comments,
// so NAME.json states the same in a sidecar NAME.json.want of
// `LINE:COL: Summary` lines. Files in bad/create and bad/register are
// parsed with that operation's rules. testdata/good files are compared with
// expected Volumes, each HCL file with its JSON twin.
package volumespec
