package client

import "testing"

// --server takes a URL, host:port or :port.
func TestNormalizeServer(t *testing.T) {
	for in, want := range map[string]string{
		"http://aodb:8080/":    "http://aodb:8080",
		"https://msgx.example": "https://msgx.example",
		"aodb:8080":            "http://aodb:8080",
		":9090":                "http://127.0.0.1:9090",
		" 10.0.0.5:8080 ":      "http://10.0.0.5:8080",
	} {
		if got := NormalizeServer(in); got != want {
			t.Errorf("NormalizeServer(%q) = %q, want %q", in, got, want)
		}
	}
}
