package jobspec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// MetaVarPrefix starts the runtime variable of every meta key:
// `${NOMAD_META_owner}` is the merged job/group/task meta value "owner".
const MetaVarPrefix = "NOMAD_META_"

// Runtime variable names, as the task runner must key them in the map it
// passes to Interpolate.
const (
	VarAllocID      = "NOMAD_ALLOC_ID"
	VarAllocDir     = "NOMAD_ALLOC_DIR"
	VarTaskDir      = "NOMAD_TASK_DIR"
	VarSecretsDir   = "NOMAD_SECRETS_DIR"
	VarAllocIndex   = "NOMAD_ALLOC_INDEX"
	VarAllocName    = "NOMAD_ALLOC_NAME"
	VarJobID        = "NOMAD_JOB_ID"
	VarJobName      = "NOMAD_JOB_NAME"
	VarGroupName    = "NOMAD_GROUP_NAME"
	VarTaskName     = "NOMAD_TASK_NAME"
	VarDC           = "NOMAD_DC"
	VarCSIEndpoint  = "CSI_ENDPOINT"
	VarNodeName     = "node.unique.name"
	VarNodeID       = "node.unique.id"
	VarNodeDC       = "node.datacenter"
	nodeVarRootName = "node"
)

// RuntimeVariables lists every name a job file may reference as `${NAME}`,
// sorted, excluding the open-ended NOMAD_META_<key> family (see
// MetaVarPrefix).
func RuntimeVariables() []string {
	out := []string{
		VarAllocID, VarAllocDir, VarTaskDir, VarSecretsDir, VarAllocIndex, VarAllocName,
		VarJobID, VarJobName, VarGroupName, VarTaskName, VarDC, VarCSIEndpoint,
		VarNodeName, VarNodeID, VarNodeDC,
	}
	sort.Strings(out)
	return out
}

// IsRuntimeVariable reports whether name is one the parser accepts inside
// `${...}`.
func IsRuntimeVariable(name string) bool {
	if strings.HasPrefix(name, MetaVarPrefix) && len(name) > len(MetaVarPrefix) {
		return true
	}
	for _, v := range RuntimeVariables() {
		if v == name {
			return true
		}
	}
	return false
}

// Interpolate replaces every `${NAME}` in s whose NAME is a key of vars.
// Unknown names stay as written, as in Nomad, so a literal "${x}" a program
// expects survives. Replacement is a single left-to-right pass: values are
// never rescanned, so a value containing "${...}" cannot inject a second
// expansion.
func Interpolate(s string, vars map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		name := s[i+2 : i+2+j]
		b.WriteString(s[:i])
		if v, ok := vars[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+2+j+1])
		}
		s = s[i+2+j+1:]
	}
}

// runtimeScope evaluates `${NAME}` references to the text "${NAME}" itself.
// HCL would otherwise either reject the reference (no such variable) or, with
// a real value, bake the agent's parse-time view into the job; the names only
// have values once an allocation exists, so the task runner expands them
// later with Interpolate. Nomad's jobspec2 does the same with its patched
// HCL's unknown-variable hook; standard hcl/v2 has no such hook, so each
// expression gets a context holding exactly the names it references.
func runtimeScope(expr hcl.Expression) (*hcl.EvalContext, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	vars := map[string]cty.Value{}
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		switch {
		case root == nodeVarRootName:
			vars[root] = cty.ObjectVal(map[string]cty.Value{
				"unique": cty.ObjectVal(map[string]cty.Value{
					"name": cty.StringVal("${" + VarNodeName + "}"),
					"id":   cty.StringVal("${" + VarNodeID + "}"),
				}),
				"datacenter": cty.StringVal("${" + VarNodeDC + "}"),
			})
		case IsRuntimeVariable(root):
			vars[root] = cty.StringVal("${" + root + "}")
		default:
			rng := tr.SourceRange()
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unknown variable",
				Detail: fmt.Sprintf("There is no runtime variable named %q. Known names: %s, and %s<key> for meta keys.",
					root, strings.Join(RuntimeVariables(), ", "), MetaVarPrefix),
				Subject: &rng,
			})
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return &hcl.EvalContext{Variables: vars}, nil
}
