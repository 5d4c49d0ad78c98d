# want: 3:8: Incorrect attribute value type
data_dir = "/var/lib/pluginhost"
jobs = { demo = "demo.hcl" }
