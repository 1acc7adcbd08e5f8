package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	mscripted "github.com/agentwarden/warden/internal/model/scripted"
	"github.com/agentwarden/warden/internal/scenario"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/server/openapitest"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/internal/tools"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
)

// The client tests' keys.
const (
	clientAcme   = "client-acme"
	clientGlobex = "client-globex"
	clientAdmin  = "client-admin"
)

// clientNow is the served clock: every time the API shows is this one.
var clientNow = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

// clientFixture is a warden API served in-process from a scenario's
// agent, scripted tools and scripted model turns, for the client to talk
// to.
type clientFixture struct {
	t   *testing.T
	url string
}

// clientFaults are the scenario files' fault kinds the client tests use.
var clientFaults = map[string]tscripted.FaultKind{"none": tscripted.None, "commit-then-timeout": tscripted.CommitThenTimeout}

// newClientFixture serves the scenario file (relative to the repository)
// to tenants acme and globex, with an admin key; delay slows the first
// model turn of every session by that much.
func newClientFixture(t *testing.T, file string, delay time.Duration) *clientFixture {
	t.Helper()
	sc, err := scenario.Load(filepath.Join(testdata.Root(), file))
	if err != nil {
		t.Fatal(err)
	}
	var skills []*skillstore.Skill
	for _, sk := range sc.Skills {
		c, _, err := contract.Parse(sk.SkillKey, sk.Contract)
		if err != nil {
			t.Fatal(err)
		}
		skills = append(skills, &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: sk.SkillKey, SkillName: sk.SkillName,
			SkillManual: sk.Manual, SkillContract: string(sk.Contract)}, Contract: c, ToolNames: sk.ToolNames})
	}
	var ts []tscripted.Tool
	for _, st := range sc.Tools.Scripted {
		tool := tscripted.Tool{Tool: tools.Tool{Name: st.Name, Description: st.Description, InputSchema: st.Schema},
			Write: st.Write, Handler: tscripted.Fixed(string(st.Responses[0]))}
		for _, f := range st.Faults {
			kind, ok := clientFaults[f.Kind]
			if !ok {
				t.Fatalf("%s: fault kind %s is not one the client tests serve", file, f.Kind)
			}
			tool.Faults = append(tool.Faults, tscripted.Fault{Kind: kind})
		}
		ts = append(ts, tool)
	}
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	agent := server.Agent{Profile: sc.Agent, Skills: skills}
	srv, err := server.New(server.Options{
		Guards: chain.NativeGuards(), Builtins: loop.NativeBuiltins(func() time.Time { return clientNow }),
		Keys:      map[string]string{clientAcme: "acme", clientGlobex: "globex"},
		AdminKeys: []string{clientAdmin},
		Agents: clientAgents(func(context.Context, string) (server.Agent, error) {
			return agent, nil
		}),
		Tools: tscripted.New(nil, ts...),
		NewModel: func(string, string) (model.Model, error) {
			m, err := mscripted.New(sc.Model)
			if err != nil || delay == 0 {
				return m, err
			}
			return &slowModel{inner: m, delay: delay}, nil
		},
		Loop:   loop.DefaultConfig(),
		Host:   h,
		Logger: slog.New(slog.DiscardHandler),
		Now:    func() time.Time { return clientNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	// Every answer the client gets is held to docs/openapi.json.
	hs := httptest.NewServer(openapitest.Check(t, srv.Handler()))
	t.Cleanup(hs.Close)
	return &clientFixture{t: t, url: hs.URL}
}

// slowModel plays its first turn after a delay.
type slowModel struct {
	inner *mscripted.Model
	delay time.Duration
	once  sync.Once
}

func (m *slowModel) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	var err error
	m.once.Do(func() {
		select {
		case <-time.After(m.delay):
		case <-ctx.Done():
			err = ctx.Err()
		}
	})
	if err != nil {
		return model.Response{}, err
	}
	return m.inner.Complete(ctx, req)
}

// SetObserver passes the server's observer on to the script.
func (m *slowModel) SetObserver(o mscripted.Observer) { m.inner.SetObserver(o) }

type clientAgents func(ctx context.Context, tenant string) (server.Agent, error)

func (f clientAgents) Agent(ctx context.Context, tenant string) (server.Agent, error) {
	return f(ctx, tenant)
}

// cli runs a warden command line against the fixture with key (none when
// empty) and returns its exit code and outputs.
func (f *clientFixture) cli(key string, args ...string) (int, string, string) {
	f.t.Helper()
	args = append(args, "--server", f.url)
	if key != "" {
		args = append(args, "--key", key)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// must runs a command line that must succeed, and returns its output.
func (f *clientFixture) must(key string, args ...string) string {
	f.t.Helper()
	code, stdout, stderr := f.cli(key, args...)
	if code != 0 || stderr != "" {
		f.t.Fatalf("warden %s = %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// raw is the API's answer to a GET, as it sent it.
func (f *clientFixture) raw(key, path string) string {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// newSession opens a session through the client and returns its id.
func (f *clientFixture) newSession(key string) string {
	f.t.Helper()
	out := f.must(key, "sessions", "new")
	id := strings.TrimSuffix(out, "\n")
	if !regexp.MustCompile(`^s_[0-9a-zA-Z_-]+$`).MatchString(id) {
		f.t.Fatalf("sessions new printed %q, not a session id", out)
	}
	return id
}

// expand replaces the {name} placeholders of want.
func expand(want string, vars map[string]string) string {
	for k, v := range vars {
		want = strings.ReplaceAll(want, "{"+k+"}", v)
	}
	return want
}
