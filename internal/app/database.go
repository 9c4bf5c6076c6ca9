package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"msgx/internal/config"
	"msgx/internal/lease"
	"msgx/internal/pipeline"
	"msgx/internal/store"
)

// ErrStopped says serve was asked to stop (SIGTERM) before it got going.
var ErrStopped = errors.New("stopped while waiting for the database")

// OpenDatabase opens and migrates the database. While a MySQL server does not answer it
// tries again with capped backoff, logging each try, for up to database.wait-timeout (0: no
// limit); then it gives up with exit code 5. A server that answers but refuses the
// configuration (credentials, unknown database) is exit code 4 at once, and so is a DSN that
// does not parse. A SQLite file is not waited for: if it cannot be opened, that is code 5 too.
// It sends the MySQL driver's own complaints to log.
func OpenDatabase(ctx context.Context, cfg config.Config, log *slog.Logger, clock pipeline.Clock) (*store.DB, error) {
	mysqldrv.SetLogger(driverLog{log})
	return waitForDatabase(ctx, cfg, log, clock, pipeline.Sleep)
}

// StoreOptions are the store's options of cfg's database section: its nodes, the statements'
// deadlines and the probe of the node in use (database.probe-timeout 0: none). log receives
// the moves to another node.
func StoreOptions(cfg config.Config, log *slog.Logger) store.OpenOptions {
	o := store.OpenOptions{Hosts: cfg.Database.Hosts, Log: log, StatementTimeout: cfg.Database.StatementTimeout,
		LongStatementTimeout: cfg.Database.LongStatementTimeout, ProbeEvery: cfg.Database.ProbeEvery, ProbeTimeout: cfg.Database.ProbeTimeout}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = -1
	}
	return o
}

// waitForDatabase is OpenDatabase; sleep waits d or until ctx ends (false then).
func waitForDatabase(ctx context.Context, cfg config.Config, log *slog.Logger, clock pipeline.Clock,
	sleep func(context.Context, time.Duration) bool) (*store.DB, error) {
	limit := cfg.Database.WaitTimeout
	began := clock.Now()
	for attempt := 1; ; attempt++ {
		db, err := store.OpenWith(ctx, cfg.Database.Driver, cfg.Database.DSN, StoreOptions(cfg, log))
		if err == nil {
			db, err = migrated(ctx, db, cfg, log)
			if err == nil {
				return db, nil
			}
		} else if !errors.Is(err, store.ErrUnavailable) {
			// Open fails without contacting the server only on what config says: a DSN
			// that does not parse, a SQLite directory that cannot be created.
			return nil, ExitError{Code: ExitConfig, Msg: "msgx serve: database.dsn: " + err.Error()}
		}
		switch {
		case store.IsConfigRefusal(err):
			return nil, ExitError{Code: ExitConfig, Msg: "msgx serve: the database refused the configuration (database.dsn): " + err.Error()}
		case !errors.Is(err, store.ErrUnavailable):
			return nil, err // a migration the database refused
		case cfg.Database.Driver != "mysql":
			return nil, ExitError{Code: ExitNoDatabase, Msg: "msgx serve: cannot open the database: " + err.Error()}
		}
		waited := clock.Now().Sub(began)
		if limit > 0 && waited >= limit {
			log.Error("gave up waiting for the database", "attempts", attempt, "waited", waited.Round(time.Millisecond).String(), "err", err.Error())
			return nil, ExitError{Code: ExitNoDatabase, Msg: fmt.Sprintf("msgx serve: gave up waiting for the database after %d tries over %s (database.wait-timeout %s): %v",
				attempt, waited.Round(time.Second), limit, err)}
		}
		wait := lease.RetryDelay(attempt)
		if limit > 0 {
			wait = min(wait, limit-waited) // one last try at the bound
		}
		log.Warn("database not reachable; waiting for it", "attempt", attempt, "retry_in", wait.String(),
			"waited", waited.Round(time.Millisecond).String(), "wait_timeout", limit.String(), "err", err.Error())
		if !sleep(ctx, wait) {
			return nil, ErrStopped
		}
	}
}

// migrated applies the migrations to db, closing it on failure. A migration that fails
// because the server went away in the middle counts as unavailable, so the caller waits.
func migrated(ctx context.Context, db *store.DB, cfg config.Config, log *slog.Logger) (*store.DB, error) {
	since, _ := cfg.AdoptSince() // validated by config.Load
	db.Intake.SetLegacy(store.LegacyOptions{Location: cfg.LegacyLocation(), AdoptFromID: cfg.Inbox.AdoptFromID, AdoptSince: since, Logger: log})
	v, err := db.Migrate(ctx)
	if err != nil {
		if perr := db.SQL.PingContext(ctx); perr != nil {
			err = store.Unavailable(fmt.Errorf("%w (the database stopped answering: %v)", err, perr))
		}
		db.Close()
		return nil, err
	}
	log.Info("database ready", "driver", cfg.Database.Driver, "schema_version", v)
	return db, nil
}

// driverLog sends the MySQL driver's own complaints ("closing bad idle connection") to the
// service's log, as one JSON line each, instead of bare lines on stderr.
type driverLog struct{ log *slog.Logger }

// Print implements the driver's Logger.
func (d driverLog) Print(v ...any) {
	d.log.Warn("mysql driver", "detail", strings.TrimSpace(fmt.Sprint(v...)))
}

// EffectiveBodyLimit is the inbox's body limit: http.max-body-bytes (configured), or the
// database's own limit when it is smaller (store.Intake.MaxMessageBytes; 0: none).
func EffectiveBodyLimit(configured, database int64) int64 {
	if database > 0 && database < configured {
		return database
	}
	return configured
}

// bodyLimit returns the inbox's effective body limit on db and logs it, with why when the
// database lowers http.max-body-bytes: a body over it is answered 413 before it is stored,
// never with a database error.
func bodyLimit(ctx context.Context, cfg config.Config, db *store.DB, log *slog.Logger) (int64, error) {
	dbLimit, err := db.Intake.MaxMessageBytes(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the database's message size limit: %w", err)
	}
	limit := EffectiveBodyLimit(cfg.HTTP.MaxBodyBytes, dbLimit)
	if limit < cfg.HTTP.MaxBodyBytes {
		log.Info("inbox body limit lowered to what the database stores in one statement", "effective_max_body_bytes", limit,
			"http.max-body-bytes", cfg.HTTP.MaxBodyBytes, "database_limit_bytes", dbLimit,
			"why", "MariaDB's max_allowed_packet less headroom for the statement, or the CMINMSGS_CLOB_MSG column")
	} else {
		log.Info("inbox body limit", "effective_max_body_bytes", limit, "http.max-body-bytes", cfg.HTTP.MaxBodyBytes)
	}
	return limit, nil
}

// configView is GET /api/v1/config: the redacted configuration, with the inbox's effective
// body limit as http.effective-max-body-bytes.
func configView(cfg config.Config, bodyLimit int64) func() (map[string]any, error) {
	return func() (map[string]any, error) {
		v, err := cfg.Redacted()
		if err != nil {
			return nil, err
		}
		if h, ok := v["http"].(map[string]any); ok {
			h["effective-max-body-bytes"] = bodyLimit
		}
		return v, nil
	}
}
