package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// The forwarding keys: each bad value refused with its key named, and
// forwarding on only where instances share a store.
func TestConfigForward(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	pg := []string{"--store", "postgres:postgres://u@127.0.0.1/w"}
	secret := strings.Repeat("s", 32)
	file := f.file(t, "fwd.yaml", "forward-secret: "+secret+"\nadvertise-addr: 10.0.0.3:8080\nforward-timeout: 2m\n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no secret", f.with(pg...), nil,
			"--forward-secret (WARDEN_FORWARD_SECRET): forwarding between instances needs a secret shared by all of them, at least 32 bytes (0 given); set it, or turn forwarding off with --forward=false (then a session's requests must reach its instance)"},
		{"short secret", f.with(pg...), map[string]string{"WARDEN_FORWARD_SECRET": "short"},
			"--forward-secret (WARDEN_FORWARD_SECRET): forwarding between instances needs a secret shared by all of them, at least 32 bytes (5 given); set it, or turn forwarding off with --forward=false (then a session's requests must reach its instance)"},
		{"secret as a flag", f.with(append(pg, "--forward-secret", secret)...), nil,
			"--forward-secret (WARDEN_FORWARD_SECRET): a secret on the command line shows in the process list; set WARDEN_FORWARD_SECRET or the config file's forward-secret"},
		{"wildcard addr", f.with(append(pg, "--addr", "0.0.0.0:8080")...), map[string]string{"WARDEN_FORWARD_SECRET": secret},
			`--advertise-addr (WARDEN_ADVERTISE_ADDR): required: --addr "0.0.0.0:8080" listens on every interface, so name the HOST:PORT the other instances reach this one at`},
		{"empty host addr", f.with(append(pg, "--addr", ":8080")...), map[string]string{"WARDEN_FORWARD_SECRET": secret},
			`--advertise-addr (WARDEN_ADVERTISE_ADDR): required: --addr ":8080" listens on every interface, so name the HOST:PORT the other instances reach this one at`},
		{"advertise not host:port", f.with("--advertise-addr", "10.0.0.3"), nil, `--advertise-addr (WARDEN_ADVERTISE_ADDR): "10.0.0.3" is not HOST:PORT`},
		{"advertise a wildcard", f.with("--advertise-addr", "[::]:8080"), nil, `--advertise-addr (WARDEN_ADVERTISE_ADDR): "[::]:8080" names no host the other instances can reach`},
		{"advertise port 0", f.with("--advertise-addr", "10.0.0.3:0"), nil, `--advertise-addr (WARDEN_ADVERTISE_ADDR): "10.0.0.3:0" names no port`},
		{"negative timeout", f.with("--forward-timeout=-1s"), nil, "--forward-timeout (WARDEN_FORWARD_TIMEOUT): must not be negative (0 is --run-timeout plus 30s)"},
		{"forward not a bool", f.base, map[string]string{"WARDEN_FORWARD": "maybe"}, `--forward (WARDEN_FORWARD): env WARDEN_FORWARD: "maybe" is not a bool`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadServeConfig(tt.args, envOf(tt.env), io.Discard)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}

	valid := []struct {
		name     string
		args     []string
		env      map[string]string
		forwards bool
		opts     func(c serveConfig) bool
	}{
		{"memory has one instance", f.base, nil, false, nil},
		{"sqlite has one instance", f.with("--store", "sqlite:/x/w.db"), nil, false, nil},
		{"postgres, secret from env, advertising --addr", f.with(append(pg, "--addr", "10.0.0.1:8080")...), map[string]string{"WARDEN_FORWARD_SECRET": secret}, true,
			func(c serveConfig) bool { return c.forward.Advertise == "" && c.forward.Timeout == 0 }},
		{"postgres, from the file", f.with(append(pg, "--config", file, "--addr", "0.0.0.0:8080")...), nil, true,
			func(c serveConfig) bool {
				return c.forward.Secret == secret && c.forward.Advertise == "10.0.0.3:8080" && c.forward.Timeout == 2*time.Minute
			}},
		{"postgres, forwarding off", f.with(append(pg, "--forward=false")...), nil, false, nil},
	}
	for _, tt := range valid {
		c, err := loadServeConfig(tt.args, envOf(tt.env), io.Discard)
		if err != nil || c.forwards() != tt.forwards || (tt.opts != nil && !tt.opts(c)) || (c.forwardOptions(nil) != nil) != tt.forwards {
			t.Errorf("%s: %v, forwards %t, %+v", tt.name, err, c.forwards(), c.forward)
		}
	}
}
