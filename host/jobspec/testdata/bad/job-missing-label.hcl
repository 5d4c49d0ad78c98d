# want: 2:5: Missing id for job
job {
  group "g" {}
}
