package jobspec

import (
	"github.com/hashicorp/hcl/v2"
)

var jobSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "datacenters"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "meta"},
		{Type: "group", LabelNames: []string{"name"}},
	},
}

func decodeJob(d *decoder, block *hcl.Block) *Job {
	job := &Job{
		ID:          block.Labels[0],
		Name:        block.Labels[0],
		Type:        JobTypeService,
		Datacenters: []string{"*"},
	}
	d.at("", block.DefRange)
	d.at("ID", labelRange(block))
	before := d.Count()
	c := d.Content(block.Body, jobSchema)
	if d.Count() > before {
		// A misspelt group block is reported as such; "no group" on top
		// of it would be a follow-on error.
		d.failed("TaskGroups")
	}

	if s, ok := d.str("Type", c.Attributes["type"], nil); ok {
		job.Type = s
	}
	if dcs, ok := d.strList("Datacenters", c.Attributes["datacenters"], nil); ok {
		job.Datacenters = dcs
	}

	var metaBlocks, groupBlocks hcl.Blocks
	for _, b := range c.Blocks {
		switch b.Type {
		case "meta":
			metaBlocks = append(metaBlocks, b)
		case "group":
			groupBlocks = append(groupBlocks, b)
		}
	}
	job.Meta = d.StringMap(d.AtMostOne(metaBlocks), nil)

	for _, gb := range groupBlocks {
		job.TaskGroups = append(job.TaskGroups, decodeGroup(d, job, gb, fieldIndex("TaskGroups", len(job.TaskGroups))))
	}
	return job
}
