package api

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"msgx/internal/store"
)

// flightNo is a flight number taken apart: carrier designator (IATA, 2 characters, or ICAO,
// 3 letters), number (leading zeros dropped) and operational suffix (one letter, or none).
type flightNo struct {
	Carrier string
	Number  int
	Suffix  string
}

// String is the flight number as written: carrier, number, suffix.
func (f flightNo) String() string { return f.Carrier + strconv.Itoa(f.Number) + f.Suffix }

// parseFlightNo reads a flight number such as CA8241, ca 8241, CA08241A, CCA8241 or 3U8888:
// letter case, spaces and a dash between carrier and number are ignored. ok is false when s
// is not one.
func parseFlightNo(s string) (flightNo, bool) {
	s = strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(s)))
	if len(s) < 3 || !isAlnum(s[0]) || !isAlnum(s[1]) {
		return flightNo{}, false
	}
	n := 2
	if isLetter(s[2]) && isLetter(s[0]) && isLetter(s[1]) {
		n = 3 // an ICAO designator
	}
	if isDigit(s[0]) && isDigit(s[1]) {
		return flightNo{}, false // a designator has at least one letter
	}
	carrier, rest := s[:n], s[n:]
	digits := 0
	for digits < len(rest) && isDigit(rest[digits]) {
		digits++
	}
	if digits == 0 || digits > 5 {
		return flightNo{}, false
	}
	num, _ := strconv.Atoi(rest[:digits])
	suffix := rest[digits:]
	if len(suffix) > 1 || (suffix != "" && !isLetter(suffix[0])) {
		return flightNo{}, false
	}
	return flightNo{Carrier: carrier, Number: num, Suffix: suffix}, true
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool  { return isLetter(c) || isDigit(c) }

// recordFlightNo is the flight number a flight record holds: its FLNO (with the airline
// prefix, as the AODB sends it) or, when FLNO has none, ALCD followed by FLNO.
func recordFlightNo(alcd, flno string) (flightNo, bool) {
	if f, ok := parseFlightNo(flno); ok {
		return f, true
	}
	return parseFlightNo(alcd + flno)
}

// carriers maps each airline designator to the airline's other one (IATA ↔ ICAO) as the AIRL
// reference data gives them.
type carriers map[string]string

// loadCarriers reads the AIRL reference data; without any, designators match as written.
func loadCarriers(ctx context.Context, ref store.Reference) (carriers, error) {
	out := carriers{}
	if ref == nil {
		return out, nil
	}
	es, err := ref.RefList(ctx, "AIRL")
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		var f struct{ ITOP, ICOP string }
		if json.Unmarshal(e.Fields, &f) != nil || f.ITOP == "" || f.ICOP == "" {
			continue
		}
		iata, icao := strings.ToUpper(f.ITOP), strings.ToUpper(f.ICOP)
		out[iata], out[icao] = icao, iata
	}
	return out, nil
}

// matches reports whether a flight numbered got is the one asked for by want: the same
// carrier (or its other designator), the same number, and want's suffix when it has one.
func (c carriers) matches(want, got flightNo) bool {
	if want.Number != got.Number || (want.Suffix != "" && want.Suffix != got.Suffix) {
		return false
	}
	return want.Carrier == got.Carrier || c[want.Carrier] == got.Carrier
}
