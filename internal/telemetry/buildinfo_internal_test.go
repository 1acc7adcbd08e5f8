package telemetry

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestBuildOf(t *testing.T) {
	t.Parallel()
	stamped := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/agentwarden/warden", Version: "v0.0.0-20261201164000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.time", Value: "2026-12-01T16:40:00Z"},
			{Key: "vcs.modified", Value: "true"}}}
	clean := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/agentwarden/warden", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba"}, {Key: "vcs.time", Value: "2026-11-30T08:00:00Z"}, {Key: "vcs.modified", Value: "false"}}}
	tests := []struct {
		name     string
		bi       *debug.BuildInfo
		ok       bool
		override string
		want     Build
	}{
		{"vcs stamp, dirty", stamped, true, "",
			Build{Version: "v0.0.0-20261201164000-0123456789ab+dirty", Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-12-01T16:40:00Z", Dirty: true, GoVersion: "go1.26.0"}},
		{"tagged, clean", clean, true, "",
			Build{Version: "v1.4.0", Revision: "fedcba", Time: "2026-11-30T08:00:00Z", GoVersion: "go1.26.1"}},
		{"ldflags override", stamped, true, "v2.0.0-rc1",
			Build{Version: "v2.0.0-rc1", Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-12-01T16:40:00Z", Dirty: true, GoVersion: "go1.26.0"}},
		{"no vcs stamp", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/agentwarden/warden", Version: "(devel)"}}, true, "",
			Build{Version: "(devel)", GoVersion: "go1.26.0"}},
		{"no build information", nil, false, "",
			Build{Version: "(devel)", GoVersion: runtime.Version()}},
		{"no build information, override", nil, false, "v1.0.0",
			Build{Version: "v1.0.0", GoVersion: runtime.Version()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := buildOf(tt.bi, tt.ok, tt.override); got != tt.want {
				t.Errorf("buildOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
