package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/pluginhost/pluginhost/host/jobspec/hclstrict"
)

var groupSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "count"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "restart"},
		{Type: "volume", LabelNames: []string{"alias"}},
		{Type: "meta"},
		{Type: "task", LabelNames: []string{"name"}},
	},
}

func decodeGroup(d *hclstrict.Decoder, job *Job, block *hcl.Block) *TaskGroup {
	g := &TaskGroup{Name: block.Labels[0], Count: 1, Volumes: map[string]*VolumeRequest{}}
	checkName(d, "group name", g.Name, labelRange(block))
	before := d.Count()
	c := d.Content(block.Body, groupSchema)
	clean := d.Count() == before

	if attr := c.Attributes["count"]; attr != nil {
		if n, ok := d.Int(attr, 0, maxCount); ok {
			g.Count = n
			if n > 1 && (job.Type == JobTypeSystem || job.Type == JobTypeSysBatch) {
				d.Errorf(attr.Expr.Range(), "Invalid count",
					"A %s job runs at most one allocation per node, so count must be 0 or 1, got %d.", job.Type, n)
			}
		}
	}

	var restarts, metas, volumes, tasks hcl.Blocks
	for _, b := range c.Blocks {
		switch b.Type {
		case "restart":
			restarts = append(restarts, b)
		case "meta":
			metas = append(metas, b)
		case "volume":
			volumes = append(volumes, b)
		case "task":
			tasks = append(tasks, b)
		}
	}
	g.Meta = d.StringMap(d.AtMostOne(metas), nil)
	rb := decodeRestart(d, d.AtMostOne(restarts))
	g.Restart = rb.over(defaultRestart(job.Type))
	checkRestart(d, g.Restart, rb)

	for _, vb := range volumes {
		alias := vb.Labels[0]
		if _, dup := g.Volumes[alias]; dup {
			d.Errorf(labelRange(vb), "Duplicate volume", "Volume %q is already declared in group %q.", alias, g.Name)
			continue
		}
		g.Volumes[alias] = decodeVolume(d, vb)
	}

	if len(tasks) == 0 && clean {
		d.Errorf(block.DefRange, "Missing task", "Group %q has no `task` block; a group needs at least one.", g.Name)
	}
	seen := map[string]*hcl.Block{}
	plugins := map[string]*pluginUse{}
	for _, tb := range tasks {
		name := tb.Labels[0]
		if first, dup := seen[name]; dup {
			d.Errorf(labelRange(tb), "Duplicate task", "Task %q is already defined at %s.", name, first.DefRange)
			continue
		}
		seen[name] = tb
		t, pr := decodeTask(d, g, tb)
		g.Tasks = append(g.Tasks, t)
		if t.CSIPluginConfig != nil {
			checkPluginClash(d, plugins, t, pr)
		}
	}
	return g
}

// pluginUse remembers which task of a group serves a CSI plugin ID.
type pluginUse struct {
	task, typ string
}

// checkPluginClash refuses two tasks of one allocation registering the same
// plugin ID for the same role: the registry keys plugins by type, ID and
// allocation, so the second would silently replace the first. A node task
// and a controller task may share an ID; a monolith is both.
func checkPluginClash(d *hclstrict.Decoder, seen map[string]*pluginUse, t *Task, rng hcl.Range) {
	p := t.CSIPluginConfig
	prev, ok := seen[p.ID]
	if !ok {
		seen[p.ID] = &pluginUse{task: t.Name, typ: p.Type}
		return
	}
	if prev.typ != CSIPluginTypeMonolith && p.Type != CSIPluginTypeMonolith && prev.typ != p.Type {
		prev.typ = CSIPluginTypeMonolith
		return
	}
	d.Errorf(rng, "Duplicate CSI plugin",
		"Task %q already serves CSI plugin %q as %s in this group; one allocation may serve a plugin ID once per role.",
		prev.task, p.ID, prev.typ)
}
