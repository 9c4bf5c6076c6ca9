package inbox

import (
	"errors"
	"strings"
	"testing"
)

// A body declared GBK or GB18030 is converted when only that reading is possible (bytes that
// are not UTF-8, or plain ASCII, or an XML declaration naming the Chinese charset); a body
// just as valid UTF-8 with nothing in it to say which is refused as ambiguous, never stored
// as other characters.
func TestToUTF8RefusesWhatItCannotTellApart(t *testing.T) {
	t.Parallel()
	const utf8East = "<MSG><A>东亚 机场</A></MSG>" // UTF-8 bytes, also valid GBK
	for _, tc := range []struct {
		name, body, charset string
		want                string // the stored text; "" when refused
		ambiguous           bool
	}{
		{"GBK bytes", "<MSG><A>\xb6\xab\xd1\xc7</A></MSG>", "GBK", "<MSG><A>东亚</A></MSG>", false},
		{"ASCII", "<MSG><A>EAST</A></MSG>", "GB18030", "<MSG><A>EAST</A></MSG>", false},
		{"UTF-8 without declaration", utf8East, "GBK", "", true},
		{"UTF-8 without declaration, GB18030", utf8East, "gb18030", "", true},
		{"declaration without encoding", `<?xml version="1.0"?>` + utf8East, "GBK", "", true},
		{"declaration of another charset", `<?xml version="1.0" encoding="ISO-8859-1"?>` + utf8East, "GBK", "", true},
		{"declaration says UTF-8", `<?xml version="1.0" encoding="UTF-8"?>` + utf8East, "GBK", "", false},
		{"GBK in both places", `<?xml version="1.0" encoding="GBK"?><MSG><A>` + "\xb6\xab\xd1\xc7" + `</A></MSG>`, "GBK",
			`<?xml version="1.0" encoding="GBK"?><MSG><A>东亚</A></MSG>`, false},
		{"UTF-8", utf8East, "", utf8East, false},
	} {
		got, err := toUTF8([]byte(tc.body), tc.charset)
		if tc.want != "" {
			if err != nil || got != tc.want {
				t.Errorf("%s: %q %v, want %q", tc.name, got, err, tc.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: stored %q, want refused", tc.name, got)
			continue
		}
		if errors.Is(err, errAmbiguousCharset) != tc.ambiguous {
			t.Errorf("%s: %v, ambiguous want %v", tc.name, err, tc.ambiguous)
		}
		if tc.ambiguous && !strings.Contains(err.Error(), "valid both as") {
			t.Errorf("%s: %v does not name the ambiguity", tc.name, err)
		}
	}
}
