package suggest

import "testing"

func TestClosest(t *testing.T) {
	keys := []string{"pipeline.batch-size", "pipeline.batch-wait", "pipeline.max-attempts", "http.addr"}
	commands := []string{"serve", "send", "status", "messages", "message", "replay", "simulate", "version"}
	classes := []string{"CODEC_ERROR", "UNSUPPORTED", "INFRA", "EXHAUSTED", "ORPHAN"}
	for _, c := range []struct {
		word  string
		cands []string
		want  string
	}{
		{"pipline.batch-size", keys, "pipeline.batch-size"},
		{"pipeline.batch-siez", keys, "pipeline.batch-size"},
		{"pipeline.max-attemps", keys, "pipeline.max-attempts"},
		{"http.adr", keys, "http.addr"},
		{"database.dsn", keys, ""},
		{"stauts", commands, "status"},
		{"sned", commands, "send"},
		{"simulte", commands, "simulate"},
		{"messagse", commands, "messages"},
		{"frobnicate", commands, ""},
		{"exhusted", classes, "EXHAUSTED"},
		{"infra", classes, "INFRA"},
		{"orphn", classes, "ORPHAN"},
		{"UNSUP", classes, "UNSUPPORTED"},
		{"xy", classes, ""},
	} {
		if got := Closest(c.word, c.cands); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if got := DidYouMean("stauts", commands); got != " (did you mean status?)" {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzz", commands); got != "" {
		t.Errorf("DidYouMean of nothing near = %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"abc", "ab", 1}, {"kitten", "sitting", 3}, {"机场", "机扬", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
