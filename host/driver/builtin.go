package driver

// Builtin returns the drivers pluginhost ships, keyed by job `driver` name.
// exec is the exec driver's options (see NewExec). gp is nil when the
// agent has no go-plugin plugin sets (then only raw_exec and exec).
func Builtin(w *Watcher, gp *GoPluginConfig, exec ExecOptions) (map[string]Driver, error) {
	ds := map[string]Driver{"raw_exec": NewRawExec(w), "exec": NewExec(w, exec)}
	if gp != nil {
		c := *gp
		c.Watcher = w
		d, err := NewGoPlugin(c)
		if err != nil {
			return nil, err
		}
		ds[d.Name()] = d
	}
	return ds, nil
}
