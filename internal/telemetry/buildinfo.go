package telemetry

import (
	"runtime"
	"runtime/debug"
)

// version overrides the version the Go toolchain stamps into the binary;
// `make build` sets it from the repository's tags:
//
//	go build -ldflags "-X github.com/agentwarden/warden/internal/telemetry.version=v1.2.3" ./cmd/warden
var version string

// Build describes the running binary: what `warden --version` prints and
// the labels of warden_build_info.
type Build struct {
	// Version is the -ldflags override when set, else the main module's
	// version as the toolchain stamped it ("(devel)" without one).
	Version string `json:"version"`
	// Revision and Time are the VCS commit the binary was built from and
	// its time (RFC 3339); empty when the build had no VCS stamp.
	Revision string `json:"revision"`
	Time     string `json:"time"`
	// Dirty says the work tree had changes the revision does not hold.
	Dirty     bool   `json:"dirty"`
	GoVersion string `json:"go_version"`
}

// ReadBuild reads the running binary's build information.
func ReadBuild() Build {
	bi, ok := debug.ReadBuildInfo()
	return buildOf(bi, ok, version)
}

// buildOf is ReadBuild over a given build information and override.
func buildOf(bi *debug.BuildInfo, ok bool, override string) Build {
	b := Build{Version: "(devel)", GoVersion: runtime.Version()}
	if ok && bi != nil {
		if v := bi.Main.Version; v != "" {
			b.Version = v
		}
		if bi.GoVersion != "" {
			b.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Dirty = s.Value == "true"
			}
		}
	}
	if override != "" {
		b.Version = override
	}
	return b
}
