package main

import (
	"flag"
	"fmt"
	"strings"
)

// jobParamFlags adds the flags of a job's parameters (internal/jobs Params) to fs and returns
// the parameters they make: --prune (PROJECTION_REBUILD in phase A: delete the FLIGHT_STATE
// rows Redis lacks), --flid N and --day YYYY-MM-DD (REDIS_RESTORE of one flight or day), and
// --params for any other.
func jobParamFlags(fs *flag.FlagSet) func() string {
	prune := fs.Bool("prune", false, "PROJECTION_REBUILD (phase A): delete the FLIGHT_STATE rows Redis lacks")
	flid := fs.Int64("flid", 0, "REDIS_RESTORE: restore this one flight")
	day := fs.String("day", "", "REDIS_RESTORE: restore this local day (YYYY-MM-DD)")
	raw := fs.String("params", "", "the job's parameters as the API takes them (prune, flid=N, day=YYYY-MM-DD)")
	return func() string {
		var ps []string
		if *raw != "" {
			ps = append(ps, *raw)
		}
		if *prune {
			ps = append(ps, "prune")
		}
		if *flid != 0 {
			ps = append(ps, fmt.Sprintf("flid=%d", *flid))
		}
		if *day != "" {
			ps = append(ps, "day="+*day)
		}
		return strings.Join(ps, " ")
	}
}
