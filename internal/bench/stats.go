package bench

import (
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of ds by the nearest-rank method: the
// smallest value that at least p percent of the values do not exceed. It is 0 for no values.
// ds is not modified.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 || p <= 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100 + 0.999999999) // ceil, tolerant of float noise
	rank = max(1, min(rank, len(s)))
	return s[rank-1]
}

// Ratio returns a/b, or 0 when b is not positive (no floor measured: no ratio to show).
func Ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// PerSecond returns n per elapsed second, or 0 when nothing elapsed.
func PerSecond(n int, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}

// Millis returns d in milliseconds, with microsecond resolution.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
