package app

import (
	"context"

	"msgx/internal/config"
	"msgx/internal/store"
)

// Builder builds msgx, as New does, on the database it was made for.
type Builder func(ctx context.Context, cfg config.Config, o Options) (*App, error)

// On returns the Builder of msgx on db: the bench opens a database of its own and runs on it
// exactly what serve runs (New), while it holds the database only through the interfaces it
// uses itself.
func On(db *store.DB) Builder {
	return func(ctx context.Context, cfg config.Config, o Options) (*App, error) {
		return New(ctx, cfg, db, o)
	}
}
