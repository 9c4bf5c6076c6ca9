package shadow

import (
	"testing"
	"time"
)

// Check takes one source a side, a listening time for channels, and two different channels.
func TestSourcesCheck(t *testing.T) {
	for _, c := range []struct {
		src  Sources
		want string
	}{
		{Sources{LegacyFile: "l", MsgxFile: "m"}, ""},
		{Sources{LegacyChannel: "FLOP", MsgxChannel: "msgx", For: time.Second}, ""},
		{Sources{MsgxFile: "m"}, "give exactly one of --legacy FILE and --legacy-channel CH (the legacy's is FLOP)"},
		{Sources{LegacyFile: "l", LegacyChannel: "FLOP", MsgxFile: "m"}, "give exactly one of --legacy FILE and --legacy-channel CH (the legacy's is FLOP)"},
		{Sources{LegacyFile: "l"}, "give exactly one of --msgx FILE and --msgx-channel CH"},
		{Sources{LegacyFile: "l", MsgxChannel: "msgx"}, "--for DURATION is needed to listen to a channel"},
		{Sources{LegacyChannel: "FLOP", MsgxChannel: "FLOP", For: time.Second}, "--legacy-channel and --msgx-channel are the same channel"},
	} {
		err := c.src.Check()
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%+v: %q, want %q", c.src, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%+v: accepted, want %q", c.src, c.want)
		}
	}
}
