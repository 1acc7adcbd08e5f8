package mcp_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/tools"
	"github.com/agentwarden/warden/internal/tools/mcp"
)

// Set in the test process by TestMain: a child must see the allowlisted
// one and never the other.
const (
	peerSecretVar  = "WARDEN_PEER_TEST_SECRET"
	peerAllowedVar = "WARDEN_PEER_TEST_ALLOWED"
)

func init() {
	// Before any child starts: the environment tests look for these in the
	// children.
	os.Setenv(peerSecretVar, "must-not-leak")
	os.Setenv(peerAllowedVar, "allowed")
}

// part is one content part of a rich result, as Response.Content keeps it.
type part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Resource *struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
		Blob     string `json:"blob"`
	} `json:"resource"`
}

type rich struct {
	Content []part `json:"content"`
	Text    string `json:"text"`
}

// kinds lists the part types of a rich result in order.
func kinds(t *testing.T, data json.RawMessage) []string {
	t.Helper()
	var r rich
	if err := json.Unmarshal(data, &r); err != nil || r.Content == nil {
		t.Fatalf("not a rich result: %s", data)
	}
	var out []string
	for _, p := range r.Content {
		out = append(out, p.Type)
	}
	return out
}

// peer is a connected reference server and the invoker over it.
type peer struct {
	c   *mcp.Client
	inv *chain.Invoker
	// tools as listed; skill the contract a skill without a contract gets
	// once the annotations are applied.
	tools []tools.Tool
	skill *skillstore.Skill
}

func dialPeer(t *testing.T, cfg mcp.Config, want ...string) *peer {
	t.Helper()
	c, err := mcp.Dial(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// Some tools are registered once the server has seen the client's
	// capabilities, just after initialization: wait for them.
	var ts []tools.Tool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ts, err = c.ListTools(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(want, func(n string) bool { return !slices.ContainsFunc(ts, func(x tools.Tool) bool { return x.Name == n }) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools %v not all listed after 10s: %v", want, names(ts))
		}
	}
	sk := &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: "peer"}, Contract: &contract.Contract{SkillKey: "peer"}, ToolNames: names(ts)}
	hinted, _, err := tools.ApplyHints(sk, ts)
	if err != nil {
		t.Fatal(err)
	}
	return &peer{c: c, tools: ts, skill: hinted,
		inv: &chain.Invoker{Caller: c, DefaultTimeout: 20 * time.Second, DefaultRetry: &contract.Retry{MaxAttempts: 1}}}
}

func names(ts []tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// call runs one call through the invoker, with the tool's contract as the
// annotations made it, and checks the facts every observation shares.
func (p *peer) call(t *testing.T, tool, args string) chain.Invoked {
	t.Helper()
	r := p.inv.Invoke(t.Context(), chain.Invocation{Tool: tool, Args: json.RawMessage(args), Contract: p.skill.Contract.Tool(tool), Locale: abi.LocaleEN})
	if r.Attempts != 1 {
		t.Fatalf("%s: %d attempts", tool, r.Attempts)
	}
	return r
}

func (p *peer) success(t *testing.T, tool, args string) json.RawMessage {
	t.Helper()
	r := p.call(t, tool, args)
	if o := r.Observation; o.Outcome != abi.OutcomeSuccess || o.Text != "tool "+tool+" succeeded" || string(o.Data) != string(r.Response) {
		t.Fatalf("%s(%s): %+v (data %s)", tool, args, o, o.Data)
	}
	return r.Observation.Data
}

// argsFor builds valid arguments from a tool's input schema: every required
// property gets its first enum value, its minimum, or a plain value of its
// type. Optional properties keep the server's defaults.
func argsFor(t *testing.T, schema json.RawMessage) string {
	t.Helper()
	var s struct {
		Properties map[string]struct {
			Type    string            `json:"type"`
			Enum    []json.RawMessage `json:"enum"`
			Minimum *float64          `json:"minimum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	args := map[string]any{}
	for _, k := range s.Required {
		p := s.Properties[k]
		switch {
		case len(p.Enum) > 0:
			args[k] = p.Enum[0]
		case p.Type == "number" || p.Type == "integer":
			args[k] = 2
			if p.Minimum != nil {
				args[k] = *p.Minimum
			}
		case p.Type == "string":
			args[k] = "warden"
		case p.Type == "boolean":
			args[k] = true
		case p.Type == "array":
			args[k] = []any{}
		default:
			args[k] = map[string]any{}
		}
	}
	b, _ := json.Marshal(args)
	return string(b)
}

// everythingHTTP starts the reference server's streamable HTTP transport on
// a free loopback port and returns its endpoint.
func everythingHTTP(t *testing.T, bin string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on port") {
			go func() {
				for sc.Scan() {
				}
			}()
			return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		}
	}
	t.Fatalf("server-everything did not start over HTTP: %v", sc.Err())
	return ""
}

// TestEverythingPeer calls every tool the reference server lists, once,
// through the invoker, over stdio and streamable HTTP, and checks each
// observation: the content kinds the tool returns, kept whole, and the
// server-to-client requests answered on the way.
func TestEverythingPeer(t *testing.T) {
	t.Parallel()
	bin := everythingServer.path(t)
	root := "file://" + t.TempDir()
	transports := []struct {
		name string
		cfg  func(t *testing.T) mcp.Config
	}{
		{"stdio", func(t *testing.T) mcp.Config {
			return mcp.Config{Command: []string{bin, "stdio"}, EnvAllow: []string{peerAllowedVar}, Env: []string{"WARDEN_PEER_SET=set"}}
		}},
		{"http", func(t *testing.T) mcp.Config { return mcp.Config{URL: everythingHTTP(t, bin)} }},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			cfg := tr.cfg(t)
			cfg.Roots = []*sdk.Root{{URI: root, Name: "work"}}
			p := dialPeer(t, cfg, "get-roots-list", "trigger-elicitation-request")

			// A tool that needs task augmentation is not offered; sampling
			// is not advertised, so its tool is not registered.
			for _, n := range []string{"simulate-research-query", "trigger-sampling-request"} {
				if slices.Contains(names(p.tools), n) {
					t.Fatalf("%s is offered", n)
				}
			}

			// Arguments the schema cannot give: the default of gzip's data
			// is a URL on the internet, and the long operation's takes 10 s.
			override := map[string]string{
				"gzip-file-as-resource":          `{"data":"data:text/plain;base64,` + base64.StdEncoding.EncodeToString([]byte("hello warden")) + `","outputType":"resource"}`,
				"trigger-long-running-operation": `{"duration":2,"steps":5}`,
				"get-annotated-message":          `{"messageType":"success","includeImage":true}`,
			}
			checks := map[string]func(t *testing.T, data json.RawMessage){
				"echo": func(t *testing.T, d json.RawMessage) { wantJSON(t, d, `"Echo: warden"`) },
				"get-sum": func(t *testing.T, d json.RawMessage) {
					wantJSON(t, d, `"The sum of 2 and 2 is 4."`)
				},
				"get-structured-content": func(t *testing.T, d json.RawMessage) {
					var w struct{ Temperature *float64 }
					if json.Unmarshal(d, &w) != nil || w.Temperature == nil {
						t.Fatalf("structured content %s", d)
					}
				},
				"get-annotated-message": func(t *testing.T, d json.RawMessage) {
					wantKinds(t, d, "text", "image")
				},
				"get-tiny-image": func(t *testing.T, d json.RawMessage) {
					wantKinds(t, d, "text", "image", "text")
					var r rich
					_ = json.Unmarshal(d, &r)
					png, err := base64.StdEncoding.DecodeString(r.Content[1].Data)
					if err != nil || r.Content[1].MimeType != "image/png" || !bytes.HasPrefix(png, []byte("\x89PNG")) {
						t.Fatalf("image part %+v: %v", r.Content[1], err)
					}
					if r.Text == "" {
						t.Fatal("text parts not joined into text")
					}
				},
				"get-resource-links": func(t *testing.T, d json.RawMessage) {
					wantKinds(t, d, "text", "resource_link", "resource_link", "resource_link")
					var r rich
					_ = json.Unmarshal(d, &r)
					if l := r.Content[1]; l.URI == "" || l.Name == "" || l.MimeType == "" {
						t.Fatalf("resource link %+v", l)
					}
					// Read below, through the client's resources/read
					// tool (listed last).
					override[mcp.ReadResourceTool] = `{"uri":"` + r.Content[1].URI + `"}`
				},
				mcp.ReadResourceTool: func(t *testing.T, d json.RawMessage) {
					var r struct {
						Contents []struct {
							URI  string `json:"uri"`
							Text string `json:"text"`
							Blob string `json:"blob"`
						} `json:"contents"`
					}
					if json.Unmarshal(d, &r) != nil || len(r.Contents) == 0 || r.Contents[0].URI == "" || r.Contents[0].Text+r.Contents[0].Blob == "" {
						t.Fatalf("resource read: %s", d)
					}
				},
				"get-resource-reference": func(t *testing.T, d json.RawMessage) {
					wantKinds(t, d, "text", "resource", "text")
					var r rich
					_ = json.Unmarshal(d, &r)
					if res := r.Content[1].Resource; res == nil || res.URI != "demo://resource/dynamic/text/1" || res.Text == "" {
						t.Fatalf("embedded resource %+v", r.Content[1])
					}
				},
				"gzip-file-as-resource": func(t *testing.T, d json.RawMessage) {
					wantKinds(t, d, "resource")
					var r rich
					_ = json.Unmarshal(d, &r)
					blob, _ := base64.StdEncoding.DecodeString(r.Content[0].Resource.Blob)
					zr, err := gzip.NewReader(bytes.NewReader(blob))
					if err != nil {
						t.Fatal(err)
					}
					if b, _ := io.ReadAll(zr); string(b) != "hello warden" || r.Content[0].Resource.MimeType != "application/gzip" {
						t.Fatalf("blob holds %q", b)
					}
				},
				"get-env": func(t *testing.T, d json.RawMessage) {
					var s string
					if json.Unmarshal(d, &s) == nil {
						d = json.RawMessage(s)
					}
					var env map[string]string
					if err := json.Unmarshal(d, &env); err != nil {
						t.Fatalf("get-env: %s", d)
					}
					if tr.name != "stdio" {
						return // the test started that server itself
					}
					if _, ok := env[peerSecretVar]; ok {
						t.Fatalf("the child inherited %s", peerSecretVar)
					}
					if env[peerAllowedVar] != "allowed" || env["WARDEN_PEER_SET"] != "set" || env["PATH"] == "" {
						t.Fatalf("the child's environment misses the allowlist, env or PATH: %v", env)
					}
				},
				"get-roots-list": func(t *testing.T, d json.RawMessage) {
					if !strings.Contains(string(d), root) {
						t.Fatalf("roots not answered: %s", d)
					}
				},
				"trigger-elicitation-request": func(t *testing.T, d json.RawMessage) {
					if !strings.Contains(string(d), `decline`) {
						t.Fatalf("elicitation not declined: %s", d)
					}
				},
				"toggle-simulated-logging":  func(t *testing.T, d json.RawMessage) { wantPrefix(t, d, "Started simulated") },
				"toggle-subscriber-updates": func(t *testing.T, d json.RawMessage) { wantPrefix(t, d, "Started simulated") },
				"trigger-long-running-operation": func(t *testing.T, d json.RawMessage) {
					wantPrefix(t, d, "Long running operation completed")
				},
			}
			// The tools whose annotations say they change something are
			// writes with approval when no contract speaks for them.
			hinted := []string{"gzip-file-as-resource", "toggle-simulated-logging", "toggle-subscriber-updates", "trigger-elicitation-request"}
			for _, tl := range p.tools {
				check, ok := checks[tl.Name]
				if !ok {
					t.Errorf("%s is listed but has no expectation", tl.Name)
					continue
				}
				tc := p.skill.Contract.Tool(tl.Name)
				if w := slices.Contains(hinted, tl.Name); w != (tc.IsWrite() && tc.NeedsConfirm()) || w != tl.HintsWrite() {
					t.Errorf("%s: annotations %+v, contract %+v", tl.Name, tl.Annotations, tc)
				}
				args, ok := override[tl.Name]
				if !ok {
					args = argsFor(t, tl.InputSchema)
				}
				if tl.Name == "trigger-long-running-operation" {
					continue // below, with a short timeout
				}
				check(t, p.success(t, tl.Name, args))
			}

			// Progress keeps a call alive past its timeout: 2 s of work,
			// a progress notification every 0.4 s, a 1 s timeout.
			p.inv.DefaultTimeout = time.Second
			r := p.call(t, "trigger-long-running-operation", override["trigger-long-running-operation"])
			if r.Observation.Outcome != abi.OutcomeSuccess || r.ProgressCount < 3 || r.Progress[0].Total != 5 {
				t.Fatalf("long operation: %+v, %d progress notifications %+v", r.Observation, r.ProgressCount, r.Progress)
			}
			checks["trigger-long-running-operation"](t, r.Observation.Data)
			// Without progress the same timeout fails the call.
			r = p.call(t, "trigger-long-running-operation", `{"duration":2,"steps":1}`)
			if r.Observation.Code != abi.ToolTimeout {
				t.Fatalf("one step of 2 s within 1 s: %+v", r.Observation)
			}
		})
	}
}

func wantJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	if string(got) != want {
		t.Fatalf("data %s, want %s", got, want)
	}
}

func wantKinds(t *testing.T, data json.RawMessage, want ...string) {
	t.Helper()
	if got := kinds(t, data); !slices.Equal(got, want) {
		t.Fatalf("content kinds %v, want %v", got, want)
	}
}

func wantPrefix(t *testing.T, data json.RawMessage, prefix string) {
	t.Helper()
	var s string
	if err := json.Unmarshal(data, &s); err != nil || !strings.HasPrefix(s, prefix) {
		t.Fatalf("data %s, want a text starting %q", data, prefix)
	}
}

// TestFilesystemPeer: the reference filesystem server on a temporary
// directory given as its root.
func TestFilesystemPeer(t *testing.T) {
	t.Parallel()
	bin := filesystemServer.path(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := dialPeer(t, mcp.Config{Command: []string{bin, dir}, Roots: []*sdk.Root{{URI: "file://" + dir, Name: "work"}}},
		"write_file", "read_text_file", "list_directory", "search_files")
	for _, n := range []string{"write_file", "edit_file", "move_file", "create_directory"} {
		if tc := p.skill.Contract.Tool(n); !tc.IsWrite() || !tc.NeedsConfirm() {
			t.Fatalf("%s is not a write with approval: %+v", n, tc)
		}
	}
	if tc := p.skill.Contract.Tool("read_text_file"); tc != nil {
		t.Fatalf("read_text_file got a contract: %+v", tc)
	}
	file := filepath.Join(dir, "notes.txt")
	arg := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	structured := func(t *testing.T, d json.RawMessage) string {
		t.Helper()
		var s struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(d, &s); err != nil {
			t.Fatalf("data %s: %v", d, err)
		}
		return s.Content
	}
	if got := structured(t, p.success(t, "write_file", arg(map[string]string{"path": file, "content": "hello warden\n"}))); !strings.Contains(got, "Successfully wrote") {
		t.Fatalf("write_file: %q", got)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello warden\n" {
		t.Fatalf("on disk: %q %v", b, err)
	}
	if got := structured(t, p.success(t, "read_text_file", arg(map[string]string{"path": file}))); got != "hello warden\n" {
		t.Fatalf("read_text_file: %q", got)
	}
	if got := structured(t, p.success(t, "list_directory", arg(map[string]string{"path": dir}))); got != "[FILE] notes.txt" {
		t.Fatalf("list_directory: %q", got)
	}
	if got := structured(t, p.success(t, "search_files", arg(map[string]string{"path": dir, "pattern": "*.txt"}))); got != file {
		t.Fatalf("search_files: %q", got)
	}
	// Outside the root: the tool's own refusal, with its reason.
	r := p.call(t, "read_text_file", arg(map[string]string{"path": "/etc/hostname"}))
	if o := r.Observation; o.Outcome != abi.OutcomeFailed || o.Code != abi.MCPToolError || !strings.Contains(o.Text, "Access denied") {
		t.Fatalf("outside the root: %+v", o)
	}
}

// TestMemoryPeer: the reference knowledge-graph server, its store in a
// temporary file.
func TestMemoryPeer(t *testing.T) {
	t.Parallel()
	bin := memoryServer.path(t)
	p := dialPeer(t, mcp.Config{Command: []string{bin}, Env: []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")}},
		"create_entities", "create_relations", "read_graph", "search_nodes")
	for _, n := range []string{"create_entities", "create_relations", "delete_entities"} {
		if tc := p.skill.Contract.Tool(n); !tc.IsWrite() {
			t.Fatalf("%s is not a write", n)
		}
	}
	p.success(t, "create_entities", `{"entities":[{"name":"Warden","entityType":"runtime","observations":["makes tool calls reliable"]},{"name":"MCP","entityType":"protocol","observations":["reaches business tools"]}]}`)
	p.success(t, "create_relations", `{"relations":[{"from":"Warden","to":"MCP","relationType":"speaks"}]}`)
	type graph struct {
		Entities []struct {
			Name         string   `json:"name"`
			EntityType   string   `json:"entityType"`
			Observations []string `json:"observations"`
		} `json:"entities"`
		Relations []struct {
			From, To, RelationType string
		} `json:"relations"`
	}
	var g graph
	if err := json.Unmarshal(p.success(t, "read_graph", `{}`), &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Entities) != 2 || g.Entities[0].Name != "Warden" || len(g.Relations) != 1 || g.Relations[0].RelationType != "speaks" {
		t.Fatalf("graph %+v", g)
	}
	g = graph{}
	if err := json.Unmarshal(p.success(t, "search_nodes", `{"query":"reliable"}`), &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Entities) != 1 || g.Entities[0].Name != "Warden" {
		t.Fatalf("search %+v", g)
	}
}
