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
	// sent sees every line written to the child; nil sees none.
	sent func([]byte)
	// skipped counts the lines dropped.
	skipped *atomic.Int64
	// maxLine bounds a line on stdout; 0 means the package's maxLine.
	maxLine int
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
	var w io.WriteCloser = &childStdin{WriteCloser: stdin, cmd: t.cmd, grace: t.grace, exited: exited}
	if t.sent != nil {
		w = &lineTap{WriteCloser: w, see: t.sent}
	}
	// The filter passes lines of at most limit bytes and a newline; the
	// SDK's own frame bound is set to match, not left to its default.
	return (&sdk.IOTransport{Reader: pr, Writer: w, MaxLineLength: t.limit() + 1}).Connect(ctx)
}

// maxLine bounds one line on a stdio server's stdout, as the SDK bounds
// a frame (sdk.DefaultMaxLineLength): a line longer than this is dropped
// up to its newline, counted and logged, and the session carries on. A
// reply dropped so is never answered: its call ends at its deadline, and
// the log says why.
const maxLine = sdk.DefaultMaxLineLength

// limit is t's line bound: maxLine unless a test set another.
func (t *stdioTransport) limit() int {
	if t.maxLine > 0 {
		return t.maxLine
	}
	return maxLine
}

// filter copies the JSON-RPC lines of r to w and drops the others. Once w
// is closed it keeps draining r so that the child never blocks on a full
// pipe.
func (t *stdioTransport) filter(r io.Reader, w *io.PipeWriter) {
	br := bufio.NewReaderSize(r, 64<<10)
	open := true
	limit := t.limit()
	for {
		line, over, err := readLine(br, limit)
		switch msg := bytes.TrimSpace(line); {
		case over > 0:
			t.skipped.Add(1)
			t.log.Warn("tools/mcp: dropped a line on stdout longer than the limit", "server", t.server, "bytes", over, "limit", limit)
		case len(msg) == 0 || !open:
		case isJSONRPC(msg):
			if t.peek != nil {
				t.peek(msg)
			}
			if _, werr := w.Write(append(msg, '\n')); werr != nil {
				open = false
			}
		default:
			t.skipped.Add(1)
			shown := msg
			if len(shown) > 200 {
				shown = shown[:200]
			}
			t.log.Warn("tools/mcp: skipped a line on stdout that is not JSON-RPC", "server", t.server, "line", string(shown))
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

// readLine reads one line of br, its newline included, holding at most
// limit bytes of it (the newline aside). A longer line is read to its end
// and dropped: line is nil and over its length.
func readLine(br *bufio.Reader, limit int) (line []byte, over int, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		n := len(chunk)
		if bytes.HasSuffix(chunk, []byte("\n")) {
			n--
		}
		switch {
		case over > 0:
			over += len(chunk)
		case len(line)+n > limit:
			over = len(line) + len(chunk)
			line = nil
		default:
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, over, err
		}
	}
}

// isJSONRPC reports whether msg is a JSON-RPC 2.0 message: an object whose
// "jsonrpc" is "2.0", or a non-empty batch (array) of them. A structured
// logger's line ({"level":"info",…}) is JSON but not a message, and would
// end the session were it passed on.
func isJSONRPC(msg []byte) bool {
	switch msg[0] {
	case '{':
		var fields map[string]json.RawMessage // keys as sent, not folded
		return json.Unmarshal(msg, &fields) == nil && string(fields["jsonrpc"]) == `"2.0"`
	case '[':
		var batch []json.RawMessage
		if json.Unmarshal(msg, &batch) != nil || len(batch) == 0 {
			return false
		}
		for _, e := range batch {
			if len(e) == 0 || !isJSONRPC(e) {
				return false
			}
		}
		return true
	}
	return false
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
