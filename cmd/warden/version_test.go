package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/telemetry"
)

func TestVersionLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    telemetry.Build
		want string
	}{
		{"stamped, dirty", telemetry.Build{Version: "v0.0.0-20261201164000-0123456789ab+dirty", Revision: "0123456789abcdef0123", Time: "2026-12-01T16:40:00Z", Dirty: true, GoVersion: "go1.26.0"},
			"warden v0.0.0-20261201164000-0123456789ab+dirty (0123456789ab, 2026-12-01T16:40:00Z, dirty) go1.26.0 linux/amd64"},
		{"tagged, clean", telemetry.Build{Version: "v1.2.0", Revision: "fedcba", Time: "2026-11-30T08:00:00Z", GoVersion: "go1.26.1"},
			"warden v1.2.0 (fedcba, 2026-11-30T08:00:00Z) go1.26.1 linux/amd64"},
		{"no vcs stamp", telemetry.Build{Version: "(devel)", GoVersion: "go1.26.0"}, "warden (devel) go1.26.0 linux/amd64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := versionLine(tt.b, "linux/amd64"); got != tt.want {
				t.Errorf("versionLine = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	b := telemetry.ReadBuild()
	line := versionLine(b, runtime.GOOS+"/"+runtime.GOARCH) + "\n"
	js, _ := json.Marshal(b)
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"--version", []string{"--version"}, 0, line, ""},
		{"version", []string{"version"}, 0, line, ""},
		{"json", []string{"version", "--json"}, 0, string(js) + "\n", ""},
		{"--version --json", []string{"--version", "--json"}, 0, string(js) + "\n", ""},
		{"help", []string{"version", "--help"}, 0, versionUsage, ""},
		{"unknown flag", []string{"version", "--short"}, 2, "", "warden version: flag provided but not defined: -short\n\n" + versionUsage},
		{"argument", []string{"version", "now"}, 2, "", "warden version: unexpected argument \"now\"\n\n" + versionUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("warden %s = %d\nstdout %q\nstderr %q\nwant %d\nstdout %q\nstderr %q",
					strings.Join(tt.args, " "), code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}
