package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// baseEnv names the variables a child gets from the parent even without an
// allowlist: what a process needs to find programs, its home, its locale
// and a temporary directory. Nothing that could hold a secret.
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TMP", "TEMP", "SYSTEMROOT"}

// childEnv builds a child's environment: the base variables and the
// allowlisted ones, as the parent has them, then cfg.Env on top.
func childEnv(cfg Config) []string {
	var out []string
	at := map[string]int{}
	set := func(k, v string) {
		if i, ok := at[k]; ok {
			out[i] = k + "=" + v
			return
		}
		at[k] = len(out)
		out = append(out, k+"="+v)
	}
	for _, names := range [][]string{baseEnv, cfg.EnvAllow} {
		for _, k := range names {
			if v, ok := os.LookupEnv(k); ok {
				set(k, v)
			}
		}
	}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	return out
}

// stdioTransport runs a child and speaks newline-delimited JSON-RPC over
// its stdin and stdout, like the SDK's CommandTransport, except that a line
// on stdout that is not a JSON message is logged and skipped rather than
// ending the session: servers that print a banner or a stray debug line to
// stdout stay usable.
type stdioTransport struct {
	cmd    *exec.Cmd
	grace  time.Duration
	log    *slog.Logger
	server string
	// peek sees every JSON line before the SDK does.
	peek func([]byte)
	// skipped counts the lines dropped.
	skipped *atomic.Int64
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	exited := make(chan struct{})
	go func() {
		t.filter(stdout, pw)
		// Wait only once stdout is drained (os/exec's rule for pipes).
		_ = t.cmd.Wait()
		close(exited)
	}()
	w := &childStdin{WriteCloser: stdin, cmd: t.cmd, grace: t.grace, exited: exited}
	return (&sdk.IOTransport{Reader: pr, Writer: w}).Connect(ctx)
}

// filter copies the JSON lines of r to w and drops the others. Once w is
// closed it keeps draining r so that the child never blocks on a full pipe.
func (t *stdioTransport) filter(r io.Reader, w *io.PipeWriter) {
	br := bufio.NewReaderSize(r, 64<<10)
	open := true
	for {
		line, err := br.ReadBytes('\n')
		if msg := bytes.TrimSpace(line); len(msg) > 0 && open {
			if (msg[0] == '{' || msg[0] == '[') && json.Valid(msg) {
				if t.peek != nil {
					t.peek(msg)
				}
				if _, werr := w.Write(append(msg, '\n')); werr != nil {
					open = false
				}
			} else {
				t.skipped.Add(1)
				shown := msg
				if len(shown) > 200 {
					shown = shown[:200]
				}
				t.log.Warn("tools/mcp: skipped a line on stdout that is not JSON-RPC", "server", t.server, "line", string(shown))
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = w.CloseWithError(fmt.Errorf("tools/mcp: read stdout: %w", err))
			}
			_ = w.Close()
			return
		}
	}
}

// childStdin ends the child on Close: stdin is closed, and the process
// group killed when the child has not exited within the grace.
type childStdin struct {
	io.WriteCloser
	cmd    *exec.Cmd
	grace  time.Duration
	exited chan struct{}
}

func (c *childStdin) Close() error {
	err := c.WriteCloser.Close()
	select {
	case <-c.exited:
		return err
	case <-time.After(c.grace):
	}
	killGroup(c.cmd)
	// A grandchild that left the process group may still hold stdout.
	select {
	case <-c.exited:
	case <-time.After(c.grace):
	}
	return err
}
