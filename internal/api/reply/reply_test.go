package reply

import (
	"fmt"
	"strings"
	"testing"
)

// ClipEcho cuts each quoted input to MaxEcho characters and leaves short ones and the
// message's own words alone, whatever quotes it holds.
func TestClipEcho(t *testing.T) {
	long := strings.Repeat("é", 300)
	for _, c := range []struct{ in, want string }{
		{"short %q stays", "short %q stays"},
		{fmt.Sprintf("state %q is not a state", long), fmt.Sprintf("state %q is not a state", strings.Repeat("é", MaxEcho-1)+"…")},
		{fmt.Sprintf(`send {"token":"…"}, not %q or %q`, long, "ok"), fmt.Sprintf(`send {"token":"…"}, not %q or %q`, strings.Repeat("é", MaxEcho-1)+"…", "ok")},
		{`unterminated "` + long, `unterminated "` + long},
	} {
		if got := ClipEcho(c.in); got != c.want {
			t.Errorf("ClipEcho(%.60q…) = %.300q", c.in, got)
		}
	}
	if n := len([]rune(ClipEcho(strings.Repeat("word ", 1000)))); n != maxErrorText {
		t.Errorf("a 5000-character text is cut to %d, want %d", n, maxErrorText)
	}
}
