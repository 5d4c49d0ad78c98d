# want: 5:3: Job file not found
data_dir = "/var/lib/pluginhost"
jobs = [
  "../good/sleep.hcl",
  "../good/missing.hcl",
]
