# want: 1:1: Missing plugin_id
# want: 8:8: Invalid id
# want: 9:8: Unsupported volume type
# want: 10:16: Invalid capacity_min
# want: 12:17: Invalid access_mode
# want: 13:21: Invalid attachment_mode
# want: 15:1: Unsupported argument
id   = ""
type = "host"
capacity_min = "big"
capability {
  access_mode = "rw"
  attachment_mode = "block"
}
unknown = true
