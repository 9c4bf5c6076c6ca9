package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RunOnScratch is `msgx bench` once its flags are read: it makes a temporary directory under
// BaseDir(o.Config) and one for the file sinks (sinkDir), opens the scratch database (so),
// runs the bench on them with o (its DB and WorkDir set here), writing a CPU profile of the
// processed phase to the file cpuProfile when it is not "", and removes the directories and
// the scratch database.
func RunOnScratch(ctx context.Context, so ScratchOptions, o Options, cpuProfile string) (Result, error) {
	work, err := os.MkdirTemp(BaseDir(o.Config), "msgx-bench-")
	if err != nil {
		return Result{}, fmt.Errorf("create the bench's temporary directory: %w", err)
	}
	defer os.RemoveAll(work)
	sinks, err := sinkDir(so.SinkDir, work)
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(sinks)
	so.WorkDir, o.WorkDir = work, sinks
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
	res.Database, res.Sinks = scratch.Where, filepath.Dir(sinks)
	if cerr := scratch.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return res, err
}

// sinkDir makes the file sinks' temporary directory in base, or when base is empty in
// MemoryDir if it is a directory, else in work.
func sinkDir(base, work string) (string, error) {
	if base == "" {
		base = work
		if fi, err := os.Stat(MemoryDir); err == nil && fi.IsDir() {
			base = MemoryDir
		}
	}
	dir, err := os.MkdirTemp(base, "msgx-bench-sinks-")
	if err != nil {
		return "", fmt.Errorf("create the file sinks' directory: %w", err)
	}
	return dir, nil
}
