package app

import (
	"runtime"
	"runtime/debug"
)

// Build describes the running binary: the version (the one given to ReadBuild, main.version
// when set at link time, else the module version the toolchain recorded: "v1.2.3", or
// "(devel)" for a build from a checkout), the VCS commit and its time, and whether the tree
// had uncommitted changes.
type Build struct {
	Version  string
	Commit   string // the full revision; "" when the build recorded none (no VCS, -buildvcs=false)
	Time     string // the commit time, RFC 3339
	Modified bool
	Go       string
}

// ReadBuild returns the Build of the running binary, of version when it is not "" and else of
// what runtime/debug.ReadBuildInfo recorded.
func ReadBuild(version string) Build {
	v := Build{Version: version, Go: runtime.Version()}
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
func (v Build) String() string {
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

// metricsVersion is msgx_build_info's version label: version when set (-ldflags "-X
// main.version=…"), else the module version the toolchain recorded, else (a build from a
// checkout, "(devel)") "devel-" and the first 12 characters of the VCS revision, else
// "unknown". It is never empty.
func metricsVersion(version string) string {
	if version != "" {
		return version
	}
	b := ReadBuild("")
	switch {
	case b.Version != "" && b.Version != "(devel)" && b.Version != "unknown":
		return b.Version
	case b.Commit != "":
		return "devel-" + b.Commit[:min(12, len(b.Commit))]
	}
	return "unknown"
}
