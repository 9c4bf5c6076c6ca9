package sis

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The body time formats of docs/sis-format.md §1.4. Every value is airport-local time without a zone;
// the parsers read it in the given location and return UTC. They are strict where the legacy
// was lenient: the length must be exact, every digit must be a digit, and a part out of range
// (day 32, 30 FEB, hour 25, minute 75) is an error instead of rolling over. Month names are
// read in any letter case (16Nov20 is 16 NOV 2020). Two-digit years are 2000–2099.

var monthNames = [12]string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}

// ParseDateTime parses a body date-time, ddMMMyyHHmm (11 characters, 10DEC061343), in loc and
// returns it in UTC. A 7-character date ddMMMyy is accepted too and means 00:00 that day, as
// the legacy accepted it wherever a date-time is expected. A nil loc means Asia/Shanghai.
func ParseDateTime(s string, loc *time.Location) (time.Time, error) {
	t, err := parseDateTime(s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}

// ParseDate parses a body date, ddMMMyy (exactly 7 characters, 10SEP20), as local midnight
// in loc and returns it in UTC. A nil loc means Asia/Shanghai.
func ParseDate(s string, loc *time.Location) (time.Time, error) {
	t, err := parseDate(s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}

// TimeOfDay is a local clock time in minutes since midnight (0 … 1439), the HHmm of SCHS. It
// marshals as "HH:MM".
type TimeOfDay int16

// Hour returns the hour, 0–23.
func (t TimeOfDay) Hour() int { return int(t) / 60 }

// Minute returns the minute within the hour, 0–59.
func (t TimeOfDay) Minute() int { return int(t) % 60 }

// String returns "HH:MM".
func (t TimeOfDay) String() string { return fmt.Sprintf("%02d:%02d", t.Hour(), t.Minute()) }

// MarshalText encodes t as "HH:MM".
func (t TimeOfDay) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads "HH:MM" (as MarshalText writes it) or the wire form HHmm.
func (t *TimeOfDay) UnmarshalText(b []byte) error {
	s := string(b)
	if len(s) == 5 && s[2] == ':' {
		s = s[:2] + s[3:]
	}
	v, err := ParseClock(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseClock parses a local clock time HHmm (exactly 4 digits, 00:00 … 23:59).
func ParseClock(s string) (TimeOfDay, error) {
	v, err := parseClock(s)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return v, nil
}

// ParseDuration parses a duration HHMM (exactly 4 digits, minutes 00–59) and returns it in
// minutes, HH×60+MM. (The legacy computed HH×24+MM; that was a bug.)
func ParseDuration(s string) (int, error) {
	v, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	return v, nil
}

// FormatDateTime formats t as ddMMMyyHHmm in loc (nil: Asia/Shanghai), the inverse of
// ParseDateTime for the years 2000–2099.
func FormatDateTime(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = defaultLocation
	}
	return strings.ToUpper(t.In(loc).Format("02Jan061504"))
}

// The unexported parsers return the reason alone; callers add the value and its place.

func parseDateTime(s string, loc *time.Location) (time.Time, error) {
	switch len(s) {
	case 11:
	case 7:
		return parseDate(s, loc)
	default:
		return time.Time{}, fmt.Errorf("want ddMMMyyHHmm (11 characters) or ddMMMyy (7), got %d characters", len(s))
	}
	y, m, d, err := dateParts(s[:7])
	if err != nil {
		return time.Time{}, err
	}
	hm, err := parseClock(s[7:])
	if err != nil {
		return time.Time{}, err
	}
	return localTime(y, m, d, hm.Hour(), hm.Minute(), loc), nil
}

func parseDate(s string, loc *time.Location) (time.Time, error) {
	if len(s) != 7 {
		return time.Time{}, fmt.Errorf("want ddMMMyy (7 characters), got %d characters", len(s))
	}
	y, m, d, err := dateParts(s)
	if err != nil {
		return time.Time{}, err
	}
	return localTime(y, m, d, 0, 0, loc), nil
}

func localTime(y int, m time.Month, d, hh, mm int, loc *time.Location) time.Time {
	if loc == nil {
		loc = defaultLocation
	}
	return time.Date(y, m, d, hh, mm, 0, 0, loc).UTC()
}

// dateParts reads ddMMMyy (7 characters, length already checked).
func dateParts(s string) (int, time.Month, int, error) {
	d, ok1 := twoDigits(s[0:2])
	y, ok2 := twoDigits(s[5:7])
	if !ok1 || !ok2 {
		return 0, 0, 0, errors.New("want ddMMMyy with digits for day and year")
	}
	mon := strings.ToUpper(s[2:5])
	m := time.Month(0)
	for i, n := range monthNames {
		if n == mon {
			m = time.Month(i + 1)
		}
	}
	if m == 0 {
		return 0, 0, 0, fmt.Errorf("month %q is not one of JAN … DEC", s[2:5])
	}
	y += 2000
	if d < 1 || d > daysIn(m, y) {
		return 0, 0, 0, fmt.Errorf("day %02d does not exist in %s %d", d, monthNames[m-1], y)
	}
	return y, m, d, nil
}

func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func parseClock(s string) (TimeOfDay, error) {
	if len(s) != 4 {
		return 0, fmt.Errorf("want HHmm (4 digits), got %d characters", len(s))
	}
	h, ok1 := twoDigits(s[:2])
	m, ok2 := twoDigits(s[2:])
	if !ok1 || !ok2 {
		return 0, errors.New("want HHmm (4 digits)")
	}
	if h > 23 {
		return 0, fmt.Errorf("hour %02d out of range 00–23", h)
	}
	if m > 59 {
		return 0, fmt.Errorf("minute %02d out of range 00–59", m)
	}
	return TimeOfDay(h*60 + m), nil
}

func parseDuration(s string) (int, error) {
	if len(s) != 4 {
		return 0, fmt.Errorf("want HHMM (4 digits), got %d characters", len(s))
	}
	h, ok1 := twoDigits(s[:2])
	m, ok2 := twoDigits(s[2:])
	if !ok1 || !ok2 {
		return 0, errors.New("want HHMM (4 digits)")
	}
	if m > 59 {
		return 0, fmt.Errorf("minutes %02d out of range 00–59", m)
	}
	return h*60 + m, nil
}

func twoDigits(s string) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}
