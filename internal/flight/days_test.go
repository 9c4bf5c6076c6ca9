package flight_test

import (
	"fmt"
	"testing"
	"time"

	"msgx/internal/flight"
)

// A day range is counted from the local day of now in the airport zone, both ends included.
func TestDayRangeDays(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 31, 17, 30, 0, 0, time.UTC) // 2027-01-01 01:30 in Shanghai
	if got := fmt.Sprint(flight.DayRange{From: -1, To: 1}.Days(now, shanghai)); got != "[2026-12-31 2027-01-01 2027-01-02]" {
		t.Errorf("-1..1: %s", got)
	}
	if got := flight.ActiveDays(now, shanghai); len(got) != 9 || got[0] != "2026-12-31" || got[8] != "2027-01-08" {
		t.Errorf("active days: %v", got)
	}
}
