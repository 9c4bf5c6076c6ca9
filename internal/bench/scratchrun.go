package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// RunOnScratch is `msgx bench` once its flags are read: it makes a temporary directory under
// BaseDir(o.Config) for the file sinks, opens the scratch database (so), runs the bench on
// them with o (its DB and WorkDir set here), writing a CPU profile of the processed phase to
// the file cpuProfile when it is not "", and removes the directory and the scratch database.
func RunOnScratch(ctx context.Context, so ScratchOptions, o Options, cpuProfile string) (Result, error) {
	work, err := os.MkdirTemp(BaseDir(o.Config), "msgx-bench-")
	if err != nil {
		return Result{}, fmt.Errorf("create the bench's temporary directory: %w", err)
	}
	defer os.RemoveAll(work)
	so.WorkDir, o.WorkDir = work, work
	scratch, err := OpenScratch(ctx, o.Config, so)
	if err != nil {
		return Result{}, err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return Result{}, errors.Join(fmt.Errorf("create the CPU profile: %w", err), scratch.Close())
		}
		defer f.Close()
		o.CPUProfile = f
	}
	o.DB, o.Build = scratch.DB, scratch.Build
	res, err := Run(ctx, o)
	res.Database = scratch.Where
	if cerr := scratch.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return res, err
}
