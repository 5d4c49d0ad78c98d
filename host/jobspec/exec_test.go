package jobspec

import (
	"slices"
	"testing"
)

func TestExecCapabilities(t *testing.T) {
	defaults := []string{"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
		"CAP_MKNOD", "CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT"}
	for _, tc := range []struct {
		name      string
		add, drop []string
		allow     []string
		want      []string
		err       string
	}{
		{name: "Nomad's default set", want: defaults},
		{name: "drop all, add two", drop: []string{"all"}, add: []string{"chown", " CAP_KILL "}, want: []string{"CAP_CHOWN", "CAP_KILL"}},
		{name: "drop one in another spelling", drop: []string{"cap_dac_override"},
			want: slices.DeleteFunc(slices.Clone(defaults), func(s string) bool { return s == "CAP_DAC_OVERRIDE" })},
		{name: "net_raw is not allowed by default", add: []string{"net_raw"}, err: "driver does not allow the following capabilities: net_raw"},
		{name: "allowed when allow_caps has it", add: []string{"NET_RAW"}, drop: []string{"ALL"},
			allow: append(slices.Clone(NomadDefaultCapabilities), "net_raw"), want: []string{"CAP_NET_RAW"}},
		{name: "allow_caps narrows the basis", allow: []string{"chown", "kill"}, want: []string{"CAP_CHOWN", "CAP_KILL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExecCapabilities(&TaskConfig{CapAdd: tc.add, CapDrop: tc.drop}, tc.allow)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got %v, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
