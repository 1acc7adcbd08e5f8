package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
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

// apiRefusal is an error answer of the API: exit status 1.
type apiRefusal struct {
	status        int
	code, message string
}

func (e *apiRefusal) Error() string { return e.code + ": " + e.message }

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
	var ar *apiRefusal
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\n%s", prefix, err, usageLine(group, name))
		return 2
	case errors.As(err, &ar):
		fmt.Fprintf(stderr, "warden: %s: %s\n", ar.code, ar.message)
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
	base   *url.URL
	key    string
	http   *http.Client
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
	u.Path = strings.TrimSuffix(u.Path, "/")
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
	// No overall timeout: a ?wait= answer and an event stream take their
	// time; connecting does not.
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second}
	return &apiClient{base: u, key: key, http: &http.Client{Transport: tr}}, nil
}

// request is one API request.
type request struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
	header       http.Header
}

// jsonRequest is a request with v as its JSON body.
func jsonRequest(method, path string, query url.Values, v any) request {
	b, _ := json.Marshal(v)
	return request{method: method, path: path, query: query, body: b, contentType: "application/json"}
}

// send sends r and returns the answer's status and body; an error answer
// of the API is an *apiRefusal.
func (c *apiClient) send(ctx context.Context, r request) (int, []byte, error) {
	resp, err := c.open(ctx, r)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer to %s %s: %w", r.method, r.path, err)
	}
	if resp.StatusCode >= 400 {
		return resp.StatusCode, b, refusal(resp.StatusCode, b)
	}
	return resp.StatusCode, b, nil
}

// open sends r and returns the response as it comes, for a stream; an
// error answer is read and returned as an *apiRefusal.
func (c *apiClient) open(ctx context.Context, r request) (*http.Response, error) {
	u := *c.base
	// r.path is escaped (pathID): it extends the escaped path, and Path is
	// its unescaped form, so an id is sent as given, "/" and "%" included.
	u.RawPath = strings.TrimSuffix(c.base.EscapedPath(), "/") + r.path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("warden: request path %s: %w", r.path, err)
	}
	u.Path = p
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("request %s %s: %w", r.method, r.path, err)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, ctx.Err())
		}
		return nil, fmt.Errorf("cannot reach the server at %s: %w", c.base.Redacted(), unwrapURLError(err))
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, refusal(resp.StatusCode, b)
	}
	return resp, nil
}

// unwrapURLError drops the *url.Error around a transport failure, whose
// text repeats the method and the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// refusal reads an error answer: the API's {"error":{"code","message"}},
// or whatever a proxy in front of it said.
func refusal(status int, body []byte) error {
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		return &apiRefusal{status: status, code: eb.Error.Code, message: eb.Error.Message}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text == "" {
		text = "no error body"
	}
	return &apiRefusal{status: status, code: fmt.Sprintf("http_%d", status), message: http.StatusText(status) + ": " + text}
}

// get sends a GET and decodes its JSON answer into out, or prints it as
// it is with --json (out is then left alone and printed is true).
func (c *apiClient) get(ctx context.Context, path string, query url.Values, out any) (printed bool, err error) {
	return c.call(ctx, request{method: http.MethodGet, path: path, query: query}, out)
}

// call sends r and decodes its answer into out, or with --json prints the
// answer as it is and reports printed.
func (c *apiClient) call(ctx context.Context, r request, out any) (printed bool, err error) {
	_, b, err := c.send(ctx, r)
	if err != nil {
		return false, err
	}
	if c.json {
		c.printRaw(b)
		return true, nil
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return false, fmt.Errorf("the answer to %s %s is not what the client reads: %w", r.method, r.path, err)
		}
	}
	return false, nil
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

// pathID escapes an id given on the command line for a URL path: a request's
// path is in escaped form (see open).
func pathID(id string) string { return url.PathEscape(id) }
