# Relative paths resolve against this file's directory.
data_dir   = "state"
log_level  = "DEBUG"
log_json   = true
addr       = "localhost:0"
node_name  = "n1"
datacenter = "west"
jobs       = ["sleep.hcl"]
