package pump

import (
	"fmt"
	"time"

	"msgx/internal/pipeline"
)

// ConfigKeys are the keys of the configuration that are the pump's own to check: how it
// batches (pipeline.batch-size, pipeline.batch-wait), which failure classes it parks
// (pipeline.park-classes) and how it tells a duplicate (identity.mode and the older
// identity.include-day-boundary).
type ConfigKeys struct {
	BatchSize          int
	BatchWait          time.Duration
	ParkClasses        []string
	IdentityMode       string
	IncludeDayBoundary bool
}

// CheckConfig checks k and names the first bad key. It returns identity.mode resolved: unset
// is content, or seqn-day when the older identity.include-day-boundary is true; that key set
// beside another mode is a contradiction.
func CheckConfig(k ConfigKeys) (pipeline.IdentityMode, error) {
	for _, name := range k.ParkClasses {
		if cl, ok := pipeline.ParseErrorClass(name); !ok || !cl.Parkable() {
			return "", fmt.Errorf("pipeline.park-classes: %q cannot be parked: list any of CODEC_ERROR, UNSUPPORTED, ORPHAN (MALFORMED is always DEAD at once; INFRA is what retries are for)", name)
		}
	}
	if k.BatchSize < 1 || k.BatchSize > 10000 {
		return "", fmt.Errorf("pipeline.batch-size: must be between 1 (one message per transaction) and 10000, got %d", k.BatchSize)
	}
	if k.BatchWait < 0 || k.BatchWait > time.Second {
		return "", fmt.Errorf("pipeline.batch-wait: must be between 0 (take what is due now) and 1s, got %s", k.BatchWait)
	}
	name := k.IdentityMode
	if name == "" {
		name = string(pipeline.IdentityContent)
		if k.IncludeDayBoundary {
			name = string(pipeline.IdentitySeqnDay)
		}
	}
	m, ok := pipeline.ParseIdentityMode(name)
	if !ok {
		return "", fmt.Errorf("identity.mode: %q is not content, seqn or seqn-day", name)
	}
	if k.IncludeDayBoundary && m != pipeline.IdentitySeqnDay {
		return "", fmt.Errorf("identity.include-day-boundary: true is the older spelling of identity.mode seqn-day, but identity.mode is %s: drop one of the two", m)
	}
	return m, nil
}
