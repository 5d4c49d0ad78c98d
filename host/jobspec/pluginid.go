package jobspec

// ValidPluginID reports whether id is acceptable as a CSI plugin ID: the
// rule csi_plugin blocks are held to, exported so that other files naming a
// plugin (volume specifications) refuse exactly the IDs no job can serve.
func ValidPluginID(id string) bool { return csiPluginIDPattern.MatchString(id) }
