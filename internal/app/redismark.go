package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"msgx/client"
	"msgx/internal/api"
	"msgx/internal/config"
	"msgx/internal/flight"
	"msgx/internal/flight/redisflight"
	"msgx/internal/jobs"
	"msgx/internal/metrics"
	"msgx/internal/pipeline"
	"msgx/internal/pump"
)

// phaseARedis is phase A's Redis beside the pump: the guard that stops the pump when Redis
// lost data (redisflight.Guard, pump.Marks) and REDIS_RESTORE, which writes FLIGHT_STATE back
// into Redis. Its methods do nothing on a nil receiver (phase B).
type phaseARedis struct {
	cfg    config.Config
	rs     *redisflight.Store
	mirror *flight.Store
	guard  *redisflight.Guard
	clock  pipeline.Clock
	log    *slog.Logger
	pump   *pump.Pump
	pers   persistenceState
}

func newPhaseARedis(cfg config.Config, rs *redisflight.Store, mirror *flight.Store, clock pipeline.Clock, log *slog.Logger) *phaseARedis {
	return &phaseARedis{cfg: cfg, rs: rs, mirror: mirror, guard: redisflight.NewGuard(rs, mirror, clock, log), clock: clock, log: log}
}

// wirePump gives the pump the guard.
func (r *phaseARedis) wirePump(p *pump.Pump, runner *jobs.Runner) {
	if r == nil {
		return
	}
	p.SetMarks(r.guard)
	r.pump = p
	runner.Restore = r.restore
}

// wireAPI shows a stopped pump: the status section "pump_halted", /readyz (Redis's
// persistence; the halt itself through apiPump) and the gauge msgx_pump_halted.
func (r *phaseARedis) wireAPI(d *api.Deps, p *pump.Pump, m *metrics.Metrics) {
	if r == nil {
		return
	}
	d.StatusExtra["pump_halted"] = func(context.Context) (any, error) {
		if h := p.Halted(); h != nil {
			return client.Halt(*h), nil
		}
		return nil, nil
	}
	m.Register(p.HaltMetric())
	d.Redis = r
}

// restore is REDIS_RESTORE: FLIGHT_STATE written back into Redis, everything (no parameter:
// every day FLIGHT_STATE or Redis holds, the markers deleted, then new marks in Redis and SQL,
// so a stopped pump resumes), or one flight (flid=N) or day (day=YYYY-MM-DD), the marks left
// as they are.
func (r *phaseARedis) restore(ctx context.Context, params string, doing func(string, ...any)) (string, map[string]int, error) {
	ps, err := jobs.ParseParams(params, "flid", "day")
	if err != nil {
		return "", nil, err
	}
	flid, err := ps.Int("flid")
	if err != nil {
		return "", nil, err
	}
	if flid != 0 && ps["day"] != "" {
		return "", nil, pipeline.Errorf(pipeline.Malformed, "REDIS_RESTORE takes flid or day, not both")
	}
	rp := redisflight.RestoreParams{Source: r.mirror, FLID: flid, Day: ps["day"]}
	days := 0
	last := ""
	rp.Progress = func(day string, done int) {
		if day != last {
			days, last = days+1, day
		}
		doing("restoring Redis from FLIGHT_STATE: day %s (%d so far), %d flights of it done", day, days, done)
	}
	doing("restoring Redis from FLIGHT_STATE")
	var sqlMark flight.Mark
	if rp.All() {
		if sqlMark, _, err = r.guard.SQLMark(ctx); err != nil {
			return "", nil, err
		}
	}
	res, err := r.rs.RestoreFrom(ctx, rp)
	rows := map[string]int{"Redis": res.Written - res.Deleted}
	if err != nil {
		return "", rows, err
	}
	var what string
	switch {
	case flid != 0:
		what = fmt.Sprintf("flight %d", flid)
	case len(res.Days) == 0:
		what = "no day (FLIGHT_STATE and Redis hold no flight)"
	case len(res.Days) == 1:
		what = res.Days[0]
	default:
		what = fmt.Sprintf("%s … %s (%d days)", res.Days[0], res.Days[len(res.Days)-1], len(res.Days))
	}
	summary := fmt.Sprintf("restored Redis from FLIGHT_STATE for %s: %d flights written, %d replaced, %d deleted", what, res.Written, res.Replaced, res.Deleted)
	if !rp.All() {
		summary += "; the marks are unchanged"
		if r.pump != nil && r.pump.Halted() != nil {
			// A flight Redis lost, restored, lets the pump go on; lost marks need everything.
			switch halt, err := r.guard.Check(ctx); {
			case err == nil && halt == "":
				summary += "; the pump goes on"
			case err == nil:
				summary += "; the pump stays stopped: " + halt + " (REDIS_RESTORE without flid or day restores everything)"
			}
		}
		return summary, rows, nil
	}
	m, err := r.guard.Restore(ctx, sqlMark.MsgID)
	if err != nil {
		return "", rows, err
	}
	r.log.Info("REDIS_RESTORE: Redis holds FLIGHT_STATE's flights again, with new marks", "epoch", m.Epoch, "mark", m.MsgID, "markers_deleted", res.Markers)
	return summary + fmt.Sprintf(", %d markers deleted; marks: epoch %s, mark %s in Redis and SQL", res.Markers, m.Epoch, redisflight.Thousands(m.MsgID)), rows, nil
}

// rebuildFromRedis is phase A's PROJECTION_REBUILD: FLIGHT_STATE's days rebuilt from Redis.
// Rows of those days that Redis lacks are kept unless the job says prune: they are named in
// the result, with what to run.
func rebuildFromRedis(ctx context.Context, rs *redisflight.Store, mirror *flight.Store, days []string, now time.Time, params string, doing func(string, ...any)) (string, map[string]int, error) {
	ps, err := jobs.ParseParams(params, "prune")
	if err != nil {
		return "", nil, err
	}
	res, err := mirror.RebuildFrom(ctx, flight.RebuildParams{Source: rs, Days: days, Now: now, Prune: ps.Has("prune"),
		Progress: rebuildProgress("FLIGHT_STATE from Redis", days, doing)})
	rows := map[string]int{"FLIGHT_STATE": res.Written - res.Replaced - res.Deleted}
	if err != nil {
		return "", rows, err
	}
	summary := fmt.Sprintf("rebuilt FLIGHT_STATE from Redis for %s … %s: %d flights written, %d rows replaced, %d deleted",
		days[0], days[len(days)-1], res.Written, res.Replaced, res.Deleted)
	if res.Kept > 0 {
		ids := make([]string, len(res.KeptIDs))
		for i, id := range res.KeptIDs {
			ids[i] = fmt.Sprint(id)
		}
		more := ""
		if res.Kept > len(ids) {
			more = ", …"
		}
		summary += fmt.Sprintf("; %d rows Redis lacks kept (FLID %s%s): REDIS_RESTORE brings them back into Redis, PROJECTION_REBUILD with prune deletes them",
			res.Kept, strings.Join(ids, ", "), more)
	}
	return summary, rows, nil
}

// checkPersistence is phase A's check at start that Redis keeps what it is told: a Redis
// that keeps nothing on disk (appendonly no, no save point) ends the start (exit 4, naming
// the settings) unless redis.allow-volatile accepts it, which is then said at every start
// (WARN) and by the gauge msgx_redis_volatile. A Redis that does not answer, or refuses
// CONFIG, is logged and checked again by watchPersistence when it first answers; until then
// /readyz says "not checked" (and is 503 unless redis.allow-volatile).
func (r *phaseARedis) checkPersistence(ctx context.Context, m *metrics.Metrics) error {
	if r == nil {
		return nil
	}
	m.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "msgx_redis_volatile",
		Help: "Phase A: 1 when msgx runs on a Redis that keeps nothing on disk (as last read: at the start, when Redis first answers, and after each reconnect), 0 otherwise or while not known.",
	}, func() float64 {
		if p, ok := r.persistence(); ok && p.Volatile() {
			return 1
		}
		return 0
	}))
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dials := r.rs.Dials()
	p, err := r.rs.Persistence(cctx)
	if err != nil {
		r.log.Warn("phase A: cannot read Redis's persistence settings (appendonly, appendfsync, save); not checked yet: checked when Redis answers", "addr", r.rs.Where(), "err", err.Error())
		return nil
	}
	if p.Volatile() && !r.cfg.Redis.AllowVolatile {
		return ExitError{Code: ExitConfig, Msg: fmt.Sprintf("msgx serve: config: redis at %s keeps nothing on disk: %s, so a restart loses the phase-A flight picture; "+
			"set appendonly yes (appendfsync everysec or always) in Redis (docs/deployment.md#redis), or redis.allow-volatile: true to accept it", r.rs.Where(), persistenceText(p))}
	}
	r.notePersistence(p, dials)
	return nil
}

// persistenceState is Redis's persistence as last read; known is false until it has been.
type persistenceState struct {
	mu    sync.Mutex
	known bool
	p     redisflight.Persistence
	dials uint64 // the client's connections count when it was read (redisflight.Store.Dials)
}

func (r *phaseARedis) persistence() (redisflight.Persistence, bool) {
	r.pers.mu.Lock()
	defer r.pers.mu.Unlock()
	return r.pers.p, r.pers.known
}

func persistenceText(p redisflight.Persistence) string {
	return fmt.Sprintf("appendonly is %q and save is %q", p.AppendOnly, p.Save)
}

// notePersistence records p, read when the client had made dials connections, and logs it
// when it is the first reading or differs from the last.
func (r *phaseARedis) notePersistence(p redisflight.Persistence, dials uint64) {
	r.pers.mu.Lock()
	first, changed := !r.pers.known, r.pers.p != p
	r.pers.known, r.pers.p, r.pers.dials = true, p, dials
	r.pers.mu.Unlock()
	if !first && !changed {
		return
	}
	switch {
	case p.Volatile() && !r.cfg.Redis.AllowVolatile:
		r.log.Error("phase A: Redis keeps nothing on disk: a restart of Redis loses the flight picture; /readyz answers 503 until it persists "+
			"(set appendonly yes in Redis, docs/deployment.md#redis) or redis.allow-volatile accepts it", "addr", r.rs.Where(), "appendonly", p.AppendOnly, "save", p.Save)
	case p.Volatile():
		r.log.Warn("phase A: Redis keeps nothing on disk (redis.allow-volatile: true): a restart of Redis loses the flight picture; the pump then stops until REDIS_RESTORE",
			"addr", r.rs.Where(), "appendonly", p.AppendOnly, "save", p.Save)
	case strings.EqualFold(p.AppendOnly, "yes") && strings.EqualFold(p.AppendFsync, "no"):
		r.log.Warn("phase A: Redis's appendfsync is no: the OS decides when its writes reach the disk, a crash of the host may lose many seconds of them",
			"addr", r.rs.Where())
	default:
		r.log.Info("phase A: Redis persistence", "appendonly", p.AppendOnly, "appendfsync", p.AppendFsync, "save", p.Save)
	}
}

// persistenceEvery is how often watchPersistence looks whether Redis's persistence must be
// read: while it is not known, and after each reconnect.
const persistenceEvery = time.Second

// watchPersistence reads Redis's persistence again until ctx ends: while it is not known (Redis
// did not answer at the start), and whenever the client has opened a connection since the last
// reading (a reconnect: Redis restarted, perhaps with other settings, or a new master).
func (r *phaseARedis) watchPersistence(ctx context.Context) {
	if r == nil {
		return
	}
	t := time.NewTicker(persistenceEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.pers.mu.Lock()
		due := !r.pers.known || r.rs.Dials() != r.pers.dials
		r.pers.mu.Unlock()
		if !due {
			continue
		}
		dials := r.rs.Dials()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		p, err := r.rs.Persistence(cctx)
		cancel()
		if err == nil {
			r.notePersistence(p, dials)
		}
	}
}

// Persistence is what /readyz says of Redis's persistence, and why the instance is not ready
// because of it ("" when it is fine): not known yet (unless redis.allow-volatile), or volatile
// and not accepted.
func (r *phaseARedis) Persistence() (state, notReady string) {
	p, ok := r.persistence()
	switch {
	case !ok && r.cfg.Redis.AllowVolatile:
		return "not checked", ""
	case !ok:
		return "not checked", "Redis's persistence is not checked yet (Redis has not answered CONFIG GET since the start): phase A refuses a Redis that keeps nothing on disk unless redis.allow-volatile"
	case p.Volatile() && r.cfg.Redis.AllowVolatile:
		return "volatile (redis.allow-volatile)", ""
	case p.Volatile():
		return "volatile", fmt.Sprintf("Redis at %s keeps nothing on disk (%s): set appendonly yes in Redis, or redis.allow-volatile: true to accept it", r.rs.Where(), persistenceText(p))
	}
	return fmt.Sprintf("appendonly %s, appendfsync %s, save %q", p.AppendOnly, p.AppendFsync, p.Save), ""
}
