package jobs

import (
	"msgx/client"
	"msgx/internal/pipeline"
)

// KindInfo says whether a job of one kind can run in this process's configuration and, when
// it cannot, why (GET /api/v1/jobs/kinds, the console's job page, `msgx jobs --kinds`): the
// API's wire type.
type KindInfo = client.JobKind

// The reasons a kind cannot run, as Runnable gives them and RunJob fails with them.
const (
	noRebuild     = "phase B without a REDIS_FLIGHT target: nothing to rebuild"
	noRestore     = "phase B: Redis does not hold the flights, nothing to restore"
	noConsistency = "phase B without a REDIS_FLIGHT target: one flight store, nothing to compare"
	noRetention   = "RETENTION is not configured in this process"
	noSweep       = "HISTORY_SWEEP is not configured in this process"
	noArchive     = "ARCHIVE is not configured in this process"
)

// Runnable reports whether r runs jobs of kind, and when it does not, why: the jobs whose
// part of the configuration is absent (PROJECTION_REBUILD and CONSISTENCY_CHECK in phase B
// without a REDIS_FLIGHT target, REDIS_RESTORE in phase B) would fail UNSUPPORTED at once and
// go DEAD, so they are not to be queued. A kind that is not known is not runnable.
func (r *Runner) Runnable(kind string) (ok bool, reason string) {
	if r == nil {
		return false, "no job runner in this process"
	}
	switch kind {
	case Archive:
		return r.DB != nil, pick(r.DB == nil, noArchive)
	case HistorySweep:
		off := r.Flights == nil || r.History == nil
		return !off, pick(off, noSweep)
	case Retention:
		return r.Purge != nil, pick(r.Purge == nil, noRetention)
	case ProjectionRebuild:
		return r.Rebuild != nil, pick(r.Rebuild == nil, noRebuild)
	case RedisRestore:
		return r.Restore != nil, pick(r.Restore == nil, noRestore)
	case ConsistencyCheck:
		return r.Consistency != nil, pick(r.Consistency == nil, noConsistency)
	}
	return false, "no runner for job kind " + kind
}

// Kinds lists every job kind an operator may enqueue (Kinds), in that order, with whether r
// can run it and why not.
func (r *Runner) Kinds() []KindInfo {
	out := make([]KindInfo, 0, len(Kinds))
	for _, k := range Kinds {
		ok, reason := r.Runnable(k)
		out = append(out, KindInfo{Kind: k, Runnable: ok, Reason: reason})
	}
	return out
}

// unsupported is the error of a job r cannot run: UNSUPPORTED with Runnable's reason.
func (r *Runner) unsupported(kind string) error {
	_, reason := r.Runnable(kind)
	return pipeline.Errorf(pipeline.Unsupported, "%s cannot run: %s", kind, reason)
}

func pick(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}
