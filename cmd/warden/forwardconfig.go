package main

import (
	"fmt"
	"net"
	"time"

	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/telemetry"
)

// Forwarding between instances on one PostgreSQL store: the keys, their
// defaults and their checks, kept together.
const (
	keyAdvertiseAddr  = "advertise-addr"
	keyForward        = "forward"
	keyForwardSecret  = "forward-secret"
	keyForwardTimeout = "forward-timeout"
)

// forwardKeys are the forwarding keys. Forward is on by default; with a
// postgres: store it needs Secret, and an address the peers reach
// (Advertise, else --addr when that names a host).
type forwardKeys struct {
	Advertise string
	Forward   bool
	Secret    string
	Timeout   time.Duration
}

func defaultForwardKeys() forwardKeys { return forwardKeys{Forward: true} }

func (c *serveConfig) forwardSettings() []setting {
	k := &c.forward
	return []setting{
		{name: keyAdvertiseAddr, str: &k.Advertise},
		{name: keyForward, boolean: &k.Forward},
		{name: keyForwardSecret, str: &k.Secret},
		{name: keyForwardTimeout, dur: &k.Timeout},
	}
}

// forwards says whether this instance forwards: on, with peers (a postgres:
// store; SQLite and memory have one instance).
func (c *serveConfig) forwards() bool {
	return c.forward.Forward && c.storeDialect == sqlstore.Postgres
}

func (c *serveConfig) validateForward(bad func(key, format string, a ...any) error) error {
	k := c.forward
	if k.Timeout < 0 {
		return bad(keyForwardTimeout, "must not be negative (0 is --run-timeout plus 30s)")
	}
	if c.origins[keyForwardSecret] == fromFlag {
		return bad(keyForwardSecret, "a secret on the command line shows in the process list; set %s or the config file's %s", envName(keyForwardSecret), keyForwardSecret)
	}
	if k.Advertise != "" {
		if err := advertisable(k.Advertise); err != nil {
			return bad(keyAdvertiseAddr, "%q %v", k.Advertise, err)
		}
	}
	if !c.forwards() {
		return nil
	}
	if len(k.Secret) < server.MinForwardSecret {
		return bad(keyForwardSecret, "forwarding between instances needs a secret shared by all of them, at least %d bytes (%d given); set it, or turn forwarding off with --%s=false (then a session's requests must reach its instance)",
			server.MinForwardSecret, len(k.Secret), keyForward)
	}
	if k.Advertise == "" {
		if host, _, _ := net.SplitHostPort(c.Addr); !namesHost(host) {
			return bad(keyAdvertiseAddr, "required: --addr %q listens on every interface, so name the HOST:PORT the other instances reach this one at", c.Addr)
		}
	}
	return nil
}

// advertisable checks an address peers are to reach: HOST:PORT with a host
// and a port.
func advertisable(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return fmt.Errorf("is not HOST:PORT")
	case !namesHost(host):
		return fmt.Errorf("names no host the other instances can reach")
	case port == "" || port == "0":
		return fmt.Errorf("names no port")
	}
	return nil
}

func namesHost(host string) bool {
	ip := net.ParseIP(host)
	return host != "" && (ip == nil || !ip.IsUnspecified())
}

// forwardOptions are the server's forwarding, nil when off; each hop
// counts in metrics per instance pair.
func (c *serveConfig) forwardOptions(metrics *telemetry.Metrics) *server.ForwardOptions {
	if !c.forwards() {
		return nil
	}
	return &server.ForwardOptions{Secret: []byte(c.forward.Secret), Timeout: c.forward.Timeout,
		Observe: func(f server.ForwardSample) { metrics.Forwarded(f.From, f.To, f.Outcome, f.Elapsed) }}
}

// advertiseAddr is the address written beside the lease: --advertise-addr,
// else the address the listener got (--addr with its port, when it is 0).
func (c *serveConfig) advertiseAddr(ln net.Listener) string {
	if c.forward.Advertise != "" {
		return c.forward.Advertise
	}
	return ln.Addr().String()
}
