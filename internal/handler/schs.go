package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"msgx/internal/pipeline"
	"msgx/internal/sis"
)

// SeasonType is the REF_DATA type of the stored seasonal schedules: one record per season,
// key "SDAT/EDAT" as local days (e.g. 2026-03-29/2026-10-24), fields the SCHS body (SNAM,
// APCD, SDAT, EDAT, RECS, FLTR) with the flights still valid when it was applied.
const SeasonType = "SCHS"

// RegisterSchs registers the seasonal-schedule handler for SCHS-DNLD and SCHS-RESP, and as
// the fallback of any other SCHS STYP (they all mean the same).
func RegisterSchs(r *Registry) {
	for _, styp := range []string{"DNLD", "RESP"} {
		r.Register("SCHS-"+styp, Func(decideSchs))
	}
	// The STYP of a seasonal schedule does not change what it means (docs/sis-format.md §2.1).
	r.RegisterType("SCHS", Func(decideSchs))
}

// decideSchs stores a season as docs/sis-format.md §3.7 says: the season (SDAT, EDAT) is replaced by
// the message's flights whose EDDT is today or later; a season that already ended (EDAT before
// today) only removes its stored copy. Of the other stored seasons only the previous one is
// kept: the latest-starting season whose SDAT is before this season's SDAT (docs/sis-format.md §3.7
// "the most recent previous one (by season start)"); every other stored season, older or
// starting later, is deleted in the same Decision.
func decideSchs(ctx context.Context, view View, msg *sis.Message) (pipeline.Decision, error) {
	var d pipeline.Decision
	body, ok := msg.Body.(*sis.SchsBody)
	if !ok {
		return d, fmt.Errorf("%s: body is %T, want *sis.SchsBody", msg.Tag(), msg.Body)
	}
	if err := needView(view); err != nil {
		return d, err
	}
	loc := view.Location()
	today := midnight(view.Now(), loc)
	key := localDay(body.SDAT, loc) + "/" + localDay(body.EDAT, loc)
	if body.EDAT.Before(today) {
		d.Ref = append(d.Ref, pipeline.RefChange{Op: pipeline.RefDelete, Type: SeasonType, Record: pipeline.RefRecord{Key: key}})
		d.Note = fmt.Sprintf("season %s ended before today; stored copy removed", key)
		return d, nil
	}
	season := *body
	season.Flights = make([]sis.SeasonFlight, 0, len(body.Flights))
	for _, f := range body.Flights {
		if !f.EDDT.Before(today) {
			season.Flights = append(season.Flights, f)
		}
	}
	season.Recs = len(season.Flights)
	fields, err := json.Marshal(season)
	if err != nil {
		return d, fmt.Errorf("season %s: %w", key, err)
	}
	d.Ref = append(d.Ref, pipeline.RefChange{Op: pipeline.RefUpsert, Type: SeasonType, Record: pipeline.RefRecord{Key: key, Fields: fields}})
	keys, err := view.RefKeys(ctx, SeasonType)
	if err != nil {
		return pipeline.Decision{}, pipeline.Wrap(pipeline.Infra, fmt.Errorf("read stored seasons: %w", err))
	}
	// Keys start with SDAT as YYYY-MM-DD, so their order is the order of season start. The
	// previous season is the latest-starting stored one that starts before this one; a
	// season starting on or after this one's SDAT is not "previous" and is deleted.
	sdat, _, _ := strings.Cut(key, "/")
	prev := ""
	for _, k := range keys {
		if s, _, _ := strings.Cut(k, "/"); k != key && s < sdat && k > prev {
			prev = k
		}
	}
	removed := 0
	for _, k := range keys {
		if k != key && k != prev {
			d.Ref = append(d.Ref, pipeline.RefChange{Op: pipeline.RefDelete, Type: SeasonType, Record: pipeline.RefRecord{Key: k}})
			removed++
		}
	}
	d.Note = fmt.Sprintf("season %s %s stored with %s (%d ended before today ignored); %s removed",
		key, body.SNAM, nof(len(season.Flights), "flight"), len(body.Flights)-len(season.Flights), nof(removed, "other stored season"))
	if prev != "" {
		d.Note += fmt.Sprintf(", the previous one (%s) kept", prev)
	}
	return d, nil
}
