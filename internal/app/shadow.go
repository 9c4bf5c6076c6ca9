package app

import (
	"context"
	"fmt"
	"log/slog"

	"msgx/internal/config"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// enterShadow puts db in shadow mode (mode: shadow): msgx adopts every VALID CMINMSGS row above
// the watermark whatever the legacy marked, and writes nothing into the legacy tables. The
// watermark is shadow.start-after-id when set, else the one stored at the shadow's first start
// (the highest CMINMSGS id then). A target that would deliver under one of the legacy's names
// stops the start (exit code 4).
func enterShadow(ctx context.Context, db *store.DB, cfg config.Config, clock pipeline.Clock, log *slog.Logger) error {
	wm := cfg.ShadowOptions.StartAfterID
	from := "shadow.start-after-id"
	if wm < 0 {
		var err error
		if wm, err = db.Intake.ShadowWatermark(ctx, clock.Now()); err != nil {
			return fmt.Errorf("shadow watermark: %w", err)
		}
		from = "stored at the shadow's first start"
	}
	db.Intake.SetShadow(wm)
	log.Warn("shadow mode: reading the legacy CMINMSGS, writing no legacy table; the inbox, ARCHIVE and data requests are refused",
		"after_id", wm, "watermark", from)
	return nil
}

// shadowStatus is the status section of a shadow: that it is one, and its watermark.
func shadowStatus(db *store.DB) map[string]any {
	on, after := db.Intake.ShadowAfter()
	return map[string]any{"mode": map[bool]string{true: "shadow", false: "normal"}[on], "after_id": after}
}
