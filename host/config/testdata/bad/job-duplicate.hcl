# want: 3:30: Duplicate job file
data_dir = "/var/lib/pluginhost"
jobs = ["../good/sleep.hcl", "../bad/../good/sleep.hcl"]
