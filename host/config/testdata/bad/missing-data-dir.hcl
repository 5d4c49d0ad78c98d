# want: 1:1: Missing data_dir
log_level = "info"
