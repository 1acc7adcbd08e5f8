package asallowlist_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
)

// dir is this example, where package.json and node_modules live: the
// test's working directory.
const dir = "."

var (
	buildOnce sync.Once
	modules   map[string][]byte
	buildErr  error
)

// module returns the wasm build of an asconfig.json target ("release" is the
// guard, "probe" the sandbox fixture), building both from source once per
// test binary: npm ci when node_modules does not hold the pinned versions,
// then asc.
func module(t *testing.T, target string) host.Source {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH: install Node.js 20+ to build the AssemblyScript guard")
	}
	buildOnce.Do(func() { modules, buildErr = build() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	b := modules[target]
	return host.Source{Name: "as-" + target + ".wasm", Bytes: b, SHA256: host.Digest(b)}
}

func build() (map[string][]byte, error) {
	if !installed() {
		if err := run("npm", "ci", "--no-audit", "--no-fund"); err != nil {
			return nil, err
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	out := filepath.Join(cache, "warden", "as-allowlist")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	// asc takes seconds per module: reuse the last build when no source,
	// config or pinned dependency changed since.
	sum, err := sourceDigest()
	if err != nil {
		return nil, err
	}
	stamp := filepath.Join(out, "as-allowlist.sha256")
	fresh := false
	if b, err := os.ReadFile(stamp); err == nil && string(b) == sum {
		fresh = true
	}
	mods := map[string][]byte{}
	for target, entry := range map[string]string{"release": "assembly/index.ts", "probe": "testdata/probe.ts"} {
		file := filepath.Join(out, "as-allowlist-"+target+".wasm")
		b, err := os.ReadFile(file)
		if !fresh || err != nil {
			if err := run("npx", "--no-install", "asc", entry, "--target", target, "--outFile", file); err != nil {
				return nil, err
			}
			if b, err = os.ReadFile(file); err != nil {
				return nil, err
			}
		}
		mods[target] = b
	}
	if err := os.WriteFile(stamp, []byte(sum), 0o644); err != nil {
		return nil, err
	}
	return mods, nil
}

// sourceDigest hashes everything a build depends on.
func sourceDigest() (string, error) {
	files := []string{"package-lock.json", "asconfig.json"}
	for _, glob := range []string{"assembly/*.ts", "testdata/*.ts"} {
		m, err := filepath.Glob(filepath.Join(dir, glob))
		if err != nil {
			return "", err
		}
		for _, f := range m {
			rel, _ := filepath.Rel(dir, f)
			files = append(files, rel)
		}
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// installed reports whether node_modules holds exactly the versions that
// package.json pins, so repeated runs skip npm ci.
func installed() bool {
	var pkg struct{ DevDependencies map[string]string }
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil || json.Unmarshal(b, &pkg) != nil || len(pkg.DevDependencies) == 0 {
		return false
	}
	for name, version := range pkg.DevDependencies {
		var got struct{ Version string }
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
		if err != nil || json.Unmarshal(b, &got) != nil || got.Version != version {
			return false
		}
	}
	return true
}

func run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return nil
}

const config = `{"tool":"send_email","fields":["to","cc","bcc"],"domains":["example.com","*.corp.example"]}`

const (
	fixArgs   = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	fixArgsEN = "fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"
	askZH     = "调用 builtin_node_follow_up 请用户提供允许域名内的收件人；不要自行替换或删去收件人"
	askEN     = "ask the user with builtin_node_follow_up for recipients within the allowed domains; do not replace or drop recipients on your own"
)

var cases = []struct {
	name, tool, args, bound string
	locale                  abi.Locale
	want                    string // "" = pass
}{
	{"allowed domain and subdomain", "send_email", `{"to":"ann@example.com","cc":["Bob Li <bob@dev.corp.example>"],"subject":"hi"}`, "", "", ""},
	{"case does not matter", "send_email", `{"to":"ANN@Example.COM"}`, "", "", ""},
	{"no recipients is ArgPolicy's business", "send_email", `{"subject":"hi","cc":null}`, "", "", ""},
	{"other tool", "send_sms", `{"to":"eve@evil.com"}`, "", "", ""},
	{"outside", "send_email", `{"to":"eve@evil.com","subject":"hi"}`, "", "",
		"收件人 eve@evil.com 不在允许的域名（example.com、*.corp.example）之内。下一步：" + askZH},
	{"several outside en", "send_email", `{"to":["ann@example.com","x@corp.example"],"bcc":"Y <y@gmail.com>","cc":["y@gmail.com"]}`, "", abi.LocaleEN,
		"recipients x@corp.example, y@gmail.com are outside the allowed domains (example.com, *.corp.example). Next: " + askEN},
	{"lookalike domain en", "send_email", `{"to":"a@example.com.evil.io"}`, "", abi.LocaleEN,
		"recipient a@example.com.evil.io is outside the allowed domains (example.com, *.corp.example). Next: " + askEN},
	{"escaped in JSON", "send_email", `{"to":"\u0065ve@\u0065vil.com"}`, "", abi.LocaleEN,
		"recipient eve@evil.com is outside the allowed domains (example.com, *.corp.example). Next: " + askEN},
	{"repeated key: every copy is checked", "send_email", `{"to":"ann@example.com","to":"eve@evil.com"}`, "", abi.LocaleEN,
		"recipient eve@evil.com is outside the allowed domains (example.com, *.corp.example). Next: " + askEN},
	{"bound arguments decide", "send_email", `{"to":"ann@example.com"}`, `{"to":"eve@evil.com"}`, abi.LocaleEN,
		"recipient eve@evil.com is outside the allowed domains (example.com, *.corp.example). Next: " + askEN},
	{"two addresses in one string", "send_email", `{"to":"eve@evil.com, ann@example.com"}`, "", "",
		`参数 [to] 中的 "eve@evil.com, ann@example.com" 不是邮箱地址。下一步：` + fixArgs},
	{"not an address en", "send_email", `{"cc":["ann@example.com","bob"]}`, "", abi.LocaleEN,
		`"bob" in [cc] is not an email address. Next: ` + fixArgsEN},
	{"large body", "send_email", `{"to":"ann@example.com","body":"` + strings.Repeat("很长的正文 ", 6000) + `"}`, "", "", ""},
	{"wrong type", "send_email", `{"to":42}`, "", "",
		"参数 [to] 须是邮箱地址或邮箱地址数组。下一步：" + fixArgs},
}

func newHost(t *testing.T, opts host.Options) *host.Host {
	t.Helper()
	opts.CacheDir = plugintest.CacheDir(t)
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// TestAllowlist builds the AssemblyScript guard from source, loads it through
// the extism loader and checks each verdict and its exact message.
func TestAllowlist(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, host.Options{})
	p, err := h.Load(ctx, module(t, "release"), host.Policy{Config: json.RawMessage(config)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Loader() != "extism" || p.Ref() != "as-allowlist@1.0.0" {
		t.Fatalf("loaded %s through %s, want as-allowlist@1.0.0 through extism", p.Ref(), p.Loader())
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			req := &abi.Request{Phase: abi.PhaseBefore, Tool: tt.tool, Args: json.RawMessage(tt.args), Locale: tt.locale}
			if tt.bound != "" {
				req.Bound = json.RawMessage(tt.bound)
			}
			v := p.Guard(ctx, "tenant-a", req)
			if tt.want == "" {
				if !v.Pass {
					t.Fatalf("got %v %s %q, want pass", v.Observation.Outcome, v.Observation.Code, v.Observation.Message())
				}
				return
			}
			if v.Pass {
				t.Fatalf("passed, want %q", tt.want)
			}
			o := v.Observation
			if o.Outcome != abi.OutcomeRejected || o.Code != abi.ArgRejected || o.Message() != tt.want {
				t.Fatalf("got %v %s\n %q\nwant REJECTED ARG_REJECTED\n %q", o.Outcome, o.Code, o.Message(), tt.want)
			}
		})
	}
}

// TestConfigCheckedAtLoad: the manifest's configSchema, declared in
// AssemblyScript, is enforced by the host before the first call.
func TestConfigCheckedAtLoad(t *testing.T) {
	h := newHost(t, host.Options{})
	for _, tt := range []struct{ name, config, want string }{
		{"domain with a space", `{"tool":"send_email","fields":["to"],"domains":["exa mple.com"]}`, "domains.0: "},
		{"no fields", `{"tool":"send_email","fields":[],"domains":["example.com"]}`, "fields: "},
		{"misspelt key", `{"tool":"send_email","fields":["to"],"domain":["example.com"]}`, "domain: property is not allowed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Load(context.Background(), module(t, "release"), host.Policy{Config: json.RawMessage(tt.config)})
			if !errors.Is(err, host.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
}

// TestSandbox loads a probe built the same way that tries the clock (Warden's
// warden_now and WASI's clock_time_get) and the file system (WASI
// fd_prestat_get and path_open). Without the clock capability it sees the
// deterministic 2022-01-01 stand-in, not the host's clock (fixed here in
// 2030); no directory is preopened, so there is no file it could open.
func TestSandbox(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, host.Options{Clock: func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }})
	p, err := h.Load(ctx, module(t, "probe"), host.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	v := p.Guard(ctx, "tenant-a", &abi.Request{Phase: abi.PhaseBefore, Tool: "send_email", Args: json.RawMessage(`{}`)})
	if v.Pass {
		t.Fatal("the probe passed; it always reports what it saw as a rejection")
	}
	var now, wall int64
	var clockErr, prestatErr, openErr int
	if _, err := fmt.Sscanf(v.Observation.Text, "now=%d wall=%d clockErrno=%d prestatErrno=%d openErrno=%d",
		&now, &wall, &clockErr, &prestatErr, &openErr); err != nil {
		t.Fatalf("probe said %q: %v", v.Observation.Text, err)
	}
	stand := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, ns := range map[string]int64{"warden_now": now, "clock_time_get": wall} {
		if got := time.Unix(0, ns).UTC(); got.Before(stand) || got.After(stand.Add(time.Minute)) {
			t.Errorf("%s = %v, want the 2022-01-01 stand-in", name, got)
		}
	}
	const ebadf = 8 // WASI errno: no such descriptor
	if clockErr != 0 || prestatErr != ebadf || openErr != ebadf {
		t.Errorf("clock errno %d, prestat errno %d, path_open errno %d; want 0, %d, %d", clockErr, prestatErr, openErr, ebadf, ebadf)
	}
}
