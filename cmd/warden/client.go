package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/agentwarden/warden/internal/client"
)

// The client's environment: the server's URL and the key to send.
const (
	serverEnv = "WARDEN_SERVER"
	keyEnv    = "WARDEN_KEY"
)

// clientFlagsUsage is the part of every client command's usage that names
// the flags they all take.
const clientFlagsUsage = `
flags every client command takes:
  --server URL     the warden serve to talk to (env WARDEN_SERVER)
  --key KEY        the API key: a tenant's, or an admin key for slots (env WARDEN_KEY)
  --key-file FILE  read the key from FILE instead
  --json           print the API's answer as it is (JSON), one document

Exit status: 0 done, 1 the API refused (warden: <code>: <message>) or could
not be reached, 2 a usage error.
`

// clientCommand is one subcommand of a client command group: its usage
// line, its own flags and what it does once the arguments are parsed.
type clientCommand struct {
	// args is the usage line's arguments and flags, after the command's
	// name.
	args string
	// help says what the command does, one line.
	help string
	// nargs is how many positional arguments it takes; -1 is one or more.
	nargs int
	// flags adds the command's own flags to fs.
	flags func(fs *flag.FlagSet) any
	run   func(ctx context.Context, c *apiClient, args []string, opts any) error
}

// clientGroups are the client's command groups, by name.
var clientGroups = map[string]map[string]clientCommand{
	"sessions":  sessionCommands,
	"tasks":     taskCommands,
	"approvals": approvalCommands,
	"slots":     pluginCommands,
	"plugins":   tenantPluginCommands,
	"skills":    skillCommands,
	"instances": instanceCommands,
}

// groupOrder lists a group's commands in the order its usage shows them.
var groupOrder = map[string][]string{
	"sessions":  {"list", "show", "new", "send"},
	"tasks":     {"show", "trace", "watch", "follow-up", "verify", "resume"},
	"approvals": {"list", "show", "confirm", "reject", "cancel"},
	"slots":     {"list", "show", "install", "rollback"},
	"plugins":   {"list", "show", "install", "delete"},
	"skills":    {"list", "show", "put", "delete", "import"},
	"instances": {"list"},
}

// groupUsage is the usage of a command group.
func groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: warden %s <command> [flags] [arguments]\n\ncommands:\n", group)
	for _, name := range groupOrder[group] {
		c := clientGroups[group][name]
		fmt.Fprintf(&b, "  %s\n      %s\n", strings.TrimSpace(name+" "+c.args), c.help)
	}
	b.WriteString(clientFlagsUsage)
	return b.String()
}

// commandUsage is the usage of one command.
func commandUsage(group, name string) string {
	c := clientGroups[group][name]
	line := strings.TrimSpace(fmt.Sprintf("warden %s %s %s", group, name, c.args))
	return fmt.Sprintf("usage: %s\n\n%s\n%s", line, c.help, clientFlagsUsage)
}

// usageLine is the line a usage error ends with: the command's usage, and
// where to read more.
func usageLine(group, name string) string {
	line := strings.TrimSpace(fmt.Sprintf("warden %s %s %s", group, name, clientGroups[group][name].args))
	return fmt.Sprintf("usage: %s (warden %s %s --help)\n", line, group, name)
}

// usageError is a client command line that cannot run: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// cmdClient runs a client command against a serving warden: group is
// sessions, tasks, approvals, slots, plugins, skills or instances.
func cmdClient(ctx context.Context, group string, args []string, stdout, stderr io.Writer) int {
	cmds, ok := clientGroups[group]
	if !ok {
		fmt.Fprintf(stderr, "warden: unknown command %q\n", group)
		return 2
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, groupUsage(group))
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, groupUsage(group))
		return 0
	}
	name := args[0]
	c, ok := cmds[name]
	if !ok {
		fmt.Fprintf(stderr, "warden %s: unknown command %q\n\n%s", group, name, groupUsage(group))
		return 2
	}
	prefix := "warden " + group + " " + name
	fs := flag.NewFlagSet(prefix, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	serverURL := fs.String("server", "", "")
	key := fs.String("key", "", "")
	keyFile := fs.String("key-file", "", "")
	asJSON := fs.Bool("json", false, "")
	var opts any
	if c.flags != nil {
		opts = c.flags(fs)
	}
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, commandUsage(group, name))
		return 0
	}
	if err == nil {
		switch {
		case c.nargs == 0 && len(pos) > 0:
			err = usagef("takes no arguments, got %q", pos[0])
		case c.nargs >= 0 && len(pos) != c.nargs:
			err = usagef("want %d argument%s (%s), got %d", c.nargs, plural(c.nargs), c.args, len(pos))
		case c.nargs < 0 && len(pos) == 0:
			err = usagef("want arguments (%s)", c.args)
		}
	}
	var cl *apiClient
	if err == nil {
		cl, err = newAPIClient(*serverURL, *key, *keyFile, os.Getenv)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n%s", prefix, err, usageLine(group, name))
		return 2
	}
	cl.json, cl.stdout = *asJSON, stdout
	err = c.run(ctx, cl, pos, opts)
	var ue *usageError
	var ar *client.APIError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\n%s", prefix, err, usageLine(group, name))
		return 2
	case errors.As(err, &ar):
		fmt.Fprintf(stderr, "warden: %s: %s\n", ar.Code, ar.Message)
		return 1
	default:
		fmt.Fprintf(stderr, "warden: %v\n", err)
		return 1
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// parseInterleaved parses flags placed before, between and after the
// positional arguments, which it returns; after "--" everything is
// positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// apiClient sends a command's requests to the API and prints the answers.
type apiClient struct {
	api    *client.Client
	json   bool
	stdout io.Writer
}

// newAPIClient checks the server URL and finds the key: the flags first,
// then the environment.
func newAPIClient(serverURL, key, keyFile string, getenv func(string) string) (*apiClient, error) {
	if serverURL == "" {
		serverURL = getenv(serverEnv)
	}
	if serverURL == "" {
		return nil, usagef("no server: give --server URL or set %s", serverEnv)
	}
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--server %q is not an http:// or https:// URL", serverURL)
	}
	switch {
	case key != "" && keyFile != "":
		return nil, usagef("give --key or --key-file, not both")
	case keyFile != "":
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, usagef("--key-file: %v", err)
		}
		if key = strings.TrimSpace(string(b)); key == "" {
			return nil, usagef("--key-file %s is empty", keyFile)
		}
	case key == "":
		key = getenv(keyEnv)
	}
	if key == "" {
		return nil, usagef("no key: give --key KEY, --key-file FILE or set %s", keyEnv)
	}
	return &apiClient{api: client.New(u, key)}, nil
}

// printed prints a call's answer as the API sent it under --json, one that
// did not decode too, and reports whether it did; else it returns the
// call's error.
func printed[T any, P interface {
	*T
	Of() *client.Answer
}](c *apiClient, v P, err error) (bool, error) {
	if c.json && v != nil {
		c.printRaw(v.Of().Raw)
		return true, nil
	}
	return false, err
}

// printRaw prints an answer as the API sent it, ending in one newline.
func (c *apiClient) printRaw(b []byte) {
	b = bytes.TrimRight(b, "\n")
	c.stdout.Write(append(b, '\n'))
}

// table prints rows aligned in columns, the first row being the header.
func (c *apiClient) table(rows [][]string) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
	c.aligned(b.Bytes())
}

// fields prints name-value pairs aligned, skipping empty values.
func (c *apiClient) fields(pairs ...string) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			fmt.Fprintf(tw, "%s\t%s\n", pairs[i], oneLine(pairs[i+1]))
		}
	}
	_ = tw.Flush()
	c.aligned(b.Bytes())
}

// aligned prints what a tabwriter made without the padding it leaves at
// the end of a line whose last cells are empty.
func (c *apiClient) aligned(b []byte) {
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		c.stdout.Write(append(bytes.TrimRight(line, " \n"), '\n'))
	}
}

// oneLine keeps a value on one line of a table.
func oneLine(s string) string {
	return printable(strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", " ⏎ "))
}

// printable replaces what a terminal would act on instead of showing
// (escape sequences, other control characters) with U+FFFD: tool and
// model text reaches the operator's terminal through these commands. A tab
// becomes a space.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r) && r != '\n':
			return '\uFFFD'
		}
		return r
	}, s)
}

// stamp formats an API time for a table: UTC, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
