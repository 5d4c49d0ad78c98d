# want: 1:1: Missing job block
# only comments here
