package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// buildVersion describes the running binary: the version (main.version when set at link time,
// else the module version the toolchain recorded: "v1.2.3", or "(devel)" for a build from a
// checkout), the VCS commit and its time, and whether the tree had uncommitted changes.
type buildVersion struct {
	Version  string
	Commit   string // the full revision; "" when the build recorded none (no VCS, -buildvcs=false)
	Time     string // the commit time, RFC 3339
	Modified bool
	Go       string
}

// readBuildVersion reads buildVersion from runtime/debug.ReadBuildInfo.
func readBuildVersion() buildVersion {
	v := buildVersion{Version: version, Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if v.Version == "" {
			v.Version = "unknown"
		}
		return v
	}
	if v.Version == "" {
		v.Version = info.Main.Version
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is what `msgx version` prints: "msgx v1.2.3 commit 0c9b9f8… (2026-12-03T09:00:00Z,
// modified) go1.26.8".
func (v buildVersion) String() string {
	s := "msgx " + v.Version
	if v.Commit == "" {
		s += " commit unknown"
	} else {
		s += " commit " + v.Commit
		switch {
		case v.Time != "" && v.Modified:
			s += " (" + v.Time + ", modified)"
		case v.Time != "":
			s += " (" + v.Time + ")"
		case v.Modified:
			s += " (modified)"
		}
	}
	return s + " " + v.Go
}

// versionCmd is `msgx version`.
func versionCmd(args []string) error {
	fs := newFlags("version")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return exitError{code: exitUsage}
	}
	fmt.Println(readBuildVersion())
	return nil
}
