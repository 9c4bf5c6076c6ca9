package dispatch

// SchdValues returns the record values of the KAFKA_SCHD batches planBatch makes of evs for a
// record limit of limit bytes (0: one record), for the schema test.
func SchdValues(evs []Event, limit int) [][]byte {
	plan := planBatch("KAFKA_SCHD", evs, limit)
	out := make([][]byte, 0, len(plan.recs))
	for _, r := range plan.recs {
		out = append(out, r.Value)
	}
	return out
}
