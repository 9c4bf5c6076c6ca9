package app

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"msgx/internal/api"
	"msgx/internal/pump"
)

// boardAsOf adapts the pump's board rebuilder to the API's GET /api/v1/flights?as_of=.
func boardAsOf(b *pump.Boards) api.BoardAsOf {
	return func(ctx context.Context, day string, at time.Time) (*api.AsOfBoard, error) {
		d, err := b.At(ctx, day, at)
		var before *pump.BeforeHistoryError
		if errors.As(err, &before) {
			return nil, &api.BeforeHistoryError{At: before.At, From: before.From}
		}
		if err != nil {
			return nil, err
		}
		out := &api.AsOfBoard{Flights: make([]json.RawMessage, 0, len(d.Flights)), Changed: make(map[int64]api.AsOfChange, len(d.Flights)),
			Messages: d.Messages, HistoryFrom: d.HistoryFrom, Warnings: d.Warnings}
		for _, f := range d.Flights {
			out.Flights = append(out.Flights, f.Record)
			out.Changed[f.FLID] = api.AsOfChange{At: f.ChangedAt, MsgID: f.MsgID}
		}
		return out, nil
	}
}
