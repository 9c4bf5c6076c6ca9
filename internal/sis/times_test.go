package sis

import (
	"strings"
	"testing"
	"time"
)

func TestParseDateTime(t *testing.T) {
	utc := time.UTC
	tests := []struct {
		in      string
		loc     *time.Location
		want    string // RFC 3339 in UTC; "" = error
		errPart string
	}{
		{"10DEC061343", nil, "2006-12-10T05:43:00Z", ""},
		{"10DEC061343", utc, "2006-12-10T13:43:00Z", ""},
		{"16Nov200535", nil, "2020-11-15T21:35:00Z", ""}, // mixed case, legacy rejected it
		{"16nov200535", nil, "2020-11-15T21:35:00Z", ""},
		{"01JAN000000", utc, "2000-01-01T00:00:00Z", ""},
		{"31DEC992359", utc, "2099-12-31T23:59:00Z", ""},
		{"29FEB241200", utc, "2024-02-29T12:00:00Z", ""},
		{"10SEP20", nil, "2020-09-09T16:00:00Z", ""}, // 7-char date = local midnight
		{"29FEB251200", utc, "", "day 29 does not exist in FEB 2025"},
		{"30FEB241200", utc, "", "day 30"},
		{"32JAN261200", utc, "", "day 32"},
		{"00JAN261200", utc, "", "day 00"},
		{"15MAR262500", utc, "", "hour 25"},
		{"15MAR262400", utc, "", "hour 24"},
		{"15MAR261275", utc, "", "minute 75"},
		{"15MAR26120", utc, "", "10 characters"},
		{"15MAR2612000", utc, "", "12 characters"},
		{"", utc, "", "0 characters"},
		{"15XYZ261200", utc, "", "month"},
		{"1aMAR261200", utc, "", "digits"},
		{"15MAR2612a0", utc, "", "4 digits"},
		{"+5MAR261200", utc, "", "digits"},
		{"15MAR26 1200", utc, "", "12 characters"},
	}
	for _, tt := range tests {
		got, err := ParseDateTime(tt.in, tt.loc)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseDateTime(%q) = %v, want an error", tt.in, got)
			} else if !strings.Contains(err.Error(), tt.errPart) || !strings.Contains(err.Error(), `"`+tt.in+`"`) {
				t.Errorf("ParseDateTime(%q) error %q, want it to name the value and say %q", tt.in, err, tt.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseDateTime(%q): %v", tt.in, err)
			continue
		}
		if got.Location() != time.UTC {
			t.Errorf("ParseDateTime(%q) location %v, want UTC", tt.in, got.Location())
		}
		if s := got.Format(time.RFC3339); s != tt.want {
			t.Errorf("ParseDateTime(%q) = %s, want %s", tt.in, s, tt.want)
		}
	}
}

func TestParseDate(t *testing.T) {
	got, err := ParseDate("29mar26", nil)
	if err != nil || got.Format(time.RFC3339) != "2026-03-28T16:00:00Z" {
		t.Errorf("ParseDate(29mar26) = %v, %v", got, err)
	}
	for _, in := range []string{"29MAR2600", "29MAR2", "31APR26", "29MAR2X", ""} {
		if _, err := ParseDate(in, nil); err == nil {
			t.Errorf("ParseDate(%q) accepted", in)
		}
	}
}

func TestParseClockAndDuration(t *testing.T) {
	for in, want := range map[string]TimeOfDay{"0000": 0, "1023": 623, "2359": 1439} {
		if got, err := ParseClock(in); err != nil || got != want {
			t.Errorf("ParseClock(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"2400", "1260", "123", "12345", "12a0", "-100", ""} {
		if _, err := ParseClock(in); err == nil {
			t.Errorf("ParseClock(%q) accepted", in)
		}
	}
	for in, want := range map[string]int{"0200": 120, "0145": 105, "0000": 0, "9959": 99*60 + 59} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d (HH×60+MM)", in, got, err, want)
		}
	}
	for _, in := range []string{"0075", "200", "02:00", ""} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}

func TestTimeOfDayText(t *testing.T) {
	v := TimeOfDay(9*60 + 5)
	b, _ := v.MarshalText()
	if string(b) != "09:05" {
		t.Fatalf("MarshalText = %s", b)
	}
	var back TimeOfDay
	if err := back.UnmarshalText(b); err != nil || back != v {
		t.Fatalf("UnmarshalText(%s) = %v, %v", b, back, err)
	}
}

func TestFormatDateTimeRoundTrip(t *testing.T) {
	in := "05JUL261405"
	tm, err := ParseDateTime(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := FormatDateTime(tm, nil); out != in {
		t.Errorf("FormatDateTime = %s, want %s", out, in)
	}
}
