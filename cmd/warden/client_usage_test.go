package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientUsage: a command line that cannot run exits 2 saying why,
// without a request; an unreachable server exits 1 naming it.
func TestClientUsage(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(nil)
	gone.Close()
	dir := t.TempDir()
	keyFile, emptyKey := filepath.Join(dir, "key"), filepath.Join(dir, "empty")
	writeFile(t, keyFile, "k\n")
	writeFile(t, emptyKey, "\n")
	const srv = "http://127.0.0.1:9"
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"group without a command", []string{"sessions"}, 2, "", groupUsage("sessions")},
		{"group help", []string{"tasks", "help"}, 0, groupUsage("tasks"), ""},
		{"group --help", []string{"approvals", "--help"}, 0, groupUsage("approvals"), ""},
		{"command help", []string{"slots", "install", "--help"}, 0, commandUsage("slots", "install"), ""},
		{"command -h", []string{"sessions", "send", "-h"}, 0, commandUsage("sessions", "send"), ""},
		{"unknown command", []string{"sessions", "lst"}, 2, "", "warden sessions: unknown command \"lst\"\n\n" + groupUsage("sessions")},
		{"unknown flag", []string{"sessions", "list", "--bogus", "--server", srv, "--key", "k"}, 2, "",
			"warden sessions list: flag provided but not defined: -bogus\nusage: warden sessions list [--limit N] [--after CURSOR] (warden sessions list --help)\n"},
		{"bad flag value", []string{"sessions", "list", "--limit", "many", "--server", srv, "--key", "k"}, 2, "",
			"warden sessions list: invalid value \"many\" for flag -limit: parse error\nusage: warden sessions list [--limit N] [--after CURSOR] (warden sessions list --help)\n"},
		{"negative limit", []string{"approvals", "list", "--limit", "-1", "--server", srv, "--key", "k"}, 2, "",
			"warden approvals list: --limit -1 is negative\nusage: warden approvals list [--status PENDING|CONFIRMED|REJECTED|CANCELLED|STALE] [--limit N] [--after CURSOR] (warden approvals list --help)\n"},
		{"too few arguments", []string{"tasks", "show", "s_1", "--server", srv, "--key", "k"}, 2, "",
			"warden tasks show: want 2 arguments (SESSION TASK), got 1\nusage: warden tasks show SESSION TASK (warden tasks show --help)\n"},
		{"too many arguments", []string{"sessions", "new", "x", "--server", srv, "--key", "k"}, 2, "",
			"warden sessions new: takes no arguments, got \"x\"\nusage: warden sessions new (warden sessions new --help)\n"},
		{"no text", []string{"sessions", "send", "s_1", "--server", srv, "--key", "k"}, 2, "",
			"warden sessions send: want a session and the message's text\nusage: warden sessions send [--wait DURATION | --no-wait] SESSION TEXT... (warden sessions send --help)\n"},
		{"no arguments at all", []string{"tasks", "follow-up", "--server", srv, "--key", "k"}, 2, "",
			"warden tasks follow-up: want arguments ([--wait DURATION] SESSION TASK ANSWER...)\nusage: warden tasks follow-up [--wait DURATION] SESSION TASK ANSWER... (warden tasks follow-up --help)\n"},
		{"wait too long", []string{"sessions", "send", "--wait", "10m", "s_1", "hi", "--server", srv, "--key", "k"}, 2, "",
			"warden sessions send: --wait 10m0s is not between 0 and 5m0s\nusage: warden sessions send [--wait DURATION | --no-wait] SESSION TEXT... (warden sessions send --help)\n"},
		{"took what", []string{"tasks", "verify", "--took", "maybe", "s_1", "t1", "--server", srv, "--key", "k"}, 2, "",
			"warden tasks verify: --took \"maybe\": say yes or no\nusage: warden tasks verify [--took yes|no] [--wait DURATION] SESSION TASK (warden tasks verify --help)\n"},
		{"no server", []string{"sessions", "list", "--key", "k"}, 2, "",
			"warden sessions list: no server: give --server URL or set WARDEN_SERVER\nusage: warden sessions list [--limit N] [--after CURSOR] (warden sessions list --help)\n"},
		{"not a URL", []string{"sessions", "list", "--server", "localhost:8080", "--key", "k"}, 2, "",
			"warden sessions list: --server \"localhost:8080\" is not an http:// or https:// URL\nusage: warden sessions list [--limit N] [--after CURSOR] (warden sessions list --help)\n"},
		{"no key", []string{"approvals", "show", "ap_1", "--server", srv}, 2, "",
			"warden approvals show: no key: give --key KEY, --key-file FILE or set WARDEN_KEY\nusage: warden approvals show APPROVAL (warden approvals show --help)\n"},
		{"two keys", []string{"approvals", "show", "ap_1", "--server", srv, "--key", "k", "--key-file", keyFile}, 2, "",
			"warden approvals show: give --key or --key-file, not both\nusage: warden approvals show APPROVAL (warden approvals show --help)\n"},
		{"empty key file", []string{"slots", "list", "--server", srv, "--key-file", emptyKey}, 2, "",
			"warden slots list: --key-file " + emptyKey + " is empty\nusage: warden slots list (warden slots list --help)\n"},
		{"no key file", []string{"slots", "list", "--server", srv, "--key-file", emptyKey + ".none"}, 2, "",
			"warden slots list: --key-file: open " + emptyKey + ".none: no such file or directory\nusage: warden slots list (warden slots list --help)\n"},
		{"unreachable", []string{"sessions", "list", "--server", gone.URL, "--key-file", keyFile}, 1, "",
			"warden: cannot reach the server at " + gone.URL + ": dial tcp " + strings.TrimPrefix(gone.URL, "http://") + ": connect: connection refused\n"},
		{"unreachable watch", []string{"tasks", "watch", "s_1", "t1", "--server", gone.URL, "--key", "k"}, 1, "",
			"warden: cannot reach the server at " + gone.URL + ": dial tcp " + strings.TrimPrefix(gone.URL, "http://") + ": connect: connection refused\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("warden %s = %d\nstdout:\n%s\nstderr:\n%s\nwant %d\nstdout:\n%s\nstderr:\n%s",
					strings.Join(tt.args, " "), code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// TestClientUsageText: every group's usage names each of its commands, and
// the flags all of them take.
func TestClientUsageText(t *testing.T) {
	t.Parallel()
	for group, cmds := range clientGroups {
		u := groupUsage(group)
		if len(groupOrder[group]) != len(cmds) {
			t.Errorf("%s: usage order lists %v, the group has %d commands", group, groupOrder[group], len(cmds))
		}
		for name := range cmds {
			if !strings.Contains(u, "\n  "+strings.TrimSpace(name+" "+cmds[name].args)+"\n      "+cmds[name].help+"\n") {
				t.Errorf("%s usage does not name %s:\n%s", group, name, u)
			}
		}
		if !strings.Contains(u, "--server URL") || !strings.Contains(u, "--json") {
			t.Errorf("%s usage does not name the common flags:\n%s", group, u)
		}
	}
}

// TestClientEnv: WARDEN_SERVER and WARDEN_KEY stand in for --server and
// --key; the flags win.
func TestClientEnv(t *testing.T) {
	f := newClientFixture(t, approvalFile, 0)
	t.Setenv(serverEnv, f.url)
	t.Setenv(keyEnv, clientAcme)
	run1 := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, stdout, stderr := run1("sessions", "list"); code != 0 || stdout != "no sessions\n" || stderr != "" {
		t.Fatalf("from the environment: %d %q %q", code, stdout, stderr)
	}
	if code, stdout, stderr := run1("sessions", "list", "--key", "wrong"); code != 1 || stdout != "" ||
		stderr != "warden: unauthorized: a valid tenant API key is required\n" {
		t.Fatalf("--key over WARDEN_KEY: %d %q %q", code, stdout, stderr)
	}
	keyFile := filepath.Join(t.TempDir(), "admin.key")
	writeFile(t, keyFile, clientAdmin+"\n")
	if code, stdout, stderr := run1("slots", "list", "--key-file", keyFile); code != 0 || stdout != "no plugin slots\n" || stderr != "" {
		t.Fatalf("--key-file over WARDEN_KEY: %d %q %q", code, stdout, stderr)
	}
	gone := httptest.NewServer(nil)
	gone.Close()
	if code, stdout, stderr := run1("sessions", "list", "--server", gone.URL, "--json"); code != 1 || stdout != "" ||
		!strings.HasPrefix(stderr, "warden: cannot reach the server at "+gone.URL+": ") {
		t.Fatalf("--server over WARDEN_SERVER: %d %q %q", code, stdout, stderr)
	}
}
