package config

import (
	"slices"
	"strings"
	"testing"
)

// The doors of issue 33: the inbox refuses every browser origin unless one is listed, and
// the live-list streams are bounded, 16 per token and 256 in all, unless configured.
func TestDoorDefaultsAndBounds(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.MaxStreamsPerToken != 16 || c.HTTP.MaxStreams != 256 || len(c.HTTP.InboxOrigins) != 0 {
		t.Fatalf("defaults: max-streams-per-token %d, max-streams %d, inbox-origins %v",
			c.HTTP.MaxStreamsPerToken, c.HTTP.MaxStreams, c.HTTP.InboxOrigins)
	}
	c, err = Load("", []string{"MSGX_HTTP_INBOX_ORIGINS=https://ops.example, http://10.0.0.5:8080", "MSGX_HTTP_MAX_STREAMS_PER_TOKEN=2"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.HTTP.InboxOrigins, []string{"https://ops.example", "http://10.0.0.5:8080"}) || c.HTTP.MaxStreamsPerToken != 2 {
		t.Fatalf("from the environment: %v %d", c.HTTP.InboxOrigins, c.HTTP.MaxStreamsPerToken)
	}
	for env, key := range map[string]string{
		"MSGX_HTTP_MAX_STREAMS=0":                  "http.max-streams",
		"MSGX_HTTP_MAX_STREAMS_PER_TOKEN=0":        "http.max-streams-per-token",
		"MSGX_HTTP_MAX_STREAMS_PER_TOKEN=257":      "http.max-streams-per-token",
		"MSGX_HTTP_INBOX_ORIGINS=ops.example":      "http.inbox-origins",
		"MSGX_HTTP_INBOX_ORIGINS=https://a.b/page": "http.inbox-origins",
		"MSGX_HTTP_INBOX_ORIGINS=null":             "http.inbox-origins",
		"MSGX_HTTP_INBOX_ORIGINS=ftp://a.b":        "http.inbox-origins",
	} {
		_, err := Load("", []string{env})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error naming %s", env, err, key)
		}
	}
}
