package redisflight

import (
	"context"

	"msgx/internal/pipeline"
)

// RefKeyer reads the keys of the reference records of one type (the SQL store's RefKeys):
// reference data stays in SQL in phase A.
type RefKeyer interface {
	RefKeys(ctx context.Context, typ string) ([]string, error)
}

// view is the handlers' view in phase A: flights from Redis, reference keys from SQL.
type view struct {
	*Store
	refs RefKeyer
}

func (v view) RefKeys(ctx context.Context, typ string) ([]string, error) {
	return v.refs.RefKeys(ctx, typ)
}

// WithRefs returns the handlers' view of phase A: the flights of s (with its batched reads,
// FlightsOf and CodeSharesOf) and the reference keys of refs.
func WithRefs(s *Store, refs RefKeyer) pipeline.View { return view{Store: s, refs: refs} }
