package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/testdata"
)

// TestWatchScan drives the watcher one scan at a time through changes of
// the plugin directory, checking after each scan which generation of
// WriteGate and env serves, and what was refused. The generation log is
// a SQLite store.
func TestWatchScan(t *testing.T) {
	t.Parallel()
	db, err := sqlstore.Open(context.Background(), sqlstore.SQLite, filepath.Join(t.TempDir(), "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := newPluginFixture(t, pluginDir(t), db)
	mods := firstPartyModules(t)
	v1 := mods["writegate.wasm"]
	v2, v3 := rebuilt(v1, "v2"), rebuilt(v1, "v3")
	junk := []byte("\x00asm\x01\x00\x00\x00junk")
	wgPath, wgSidecar := filepath.Join(f.dir, "writegate.wasm"), filepath.Join(f.dir, "writegate.json")
	write := func(path string, b []byte) func(t *testing.T) { return func(t *testing.T) { writeFile(t, path, b) } }
	zeros := strings.Repeat("0", 64)
	steps := []struct {
		name   string
		change func(t *testing.T) // before the scan; nil changes nothing
		// serving is the WriteGate digest and generation after the scan;
		// env the env slot's generation.
		serving string
		number  uint64
		env     uint64
		// refused are the digests WriteGate has refused so far.
		refused []string
	}{
		{"nothing changed", nil, host.Digest(v1), 1, 1, nil},
		{"half written: not tried", func(t *testing.T) {
			// A copy caught half-way, written in place.
			if err := os.WriteFile(wgPath, v2[:len(v2)/2], 0o644); err != nil {
				t.Fatal(err)
			}
		}, host.Digest(v1), 1, 1, nil},
		{"completed: seen once", func(t *testing.T) {
			if err := os.WriteFile(wgPath, v2, 0o644); err != nil {
				t.Fatal(err)
			}
		}, host.Digest(v1), 1, 1, nil},
		{"completed: stable, installed", nil, host.Digest(v2), 2, 1, nil},
		{"corrupt module: seen once", write(wgPath, junk), host.Digest(v2), 2, 1, nil},
		{"corrupt module: refused", nil, host.Digest(v2), 2, 1, []string{host.Digest(junk)}},
		{"corrupt module: not tried again", nil, host.Digest(v2), 2, 1, []string{host.Digest(junk)}},
		{"pinned elsewhere: seen once", func(t *testing.T) {
			writeFile(t, wgSidecar, []byte(`{"sha256":"`+zeros+`"}`))
			writeFile(t, wgPath, v3)
		}, host.Digest(v2), 2, 1, []string{host.Digest(junk)}},
		{"pinned elsewhere: refused", nil, host.Digest(v2), 2, 1, []string{host.Digest(junk), host.Digest(v3)}},
		{"pin fixed: seen once", write(wgSidecar, []byte(`{"sha256":"sha256:`+host.Digest(v3)+`"}`)), host.Digest(v2), 2, 1,
			[]string{host.Digest(junk), host.Digest(v3)}},
		// The refused corrupt module kept its number, 3.
		{"pin fixed: installed", nil, host.Digest(v3), 4, 1, []string{host.Digest(junk), host.Digest(v3)}},
		{"env config: seen once", write(filepath.Join(f.dir, "env.json"), []byte(`{"config":{"timezone":"UTC"}}`)),
			host.Digest(v3), 4, 1, []string{host.Digest(junk), host.Digest(v3)}},
		{"env config: installed", nil, host.Digest(v3), 4, 2, []string{host.Digest(junk), host.Digest(v3)}},
		{"module removed: keeps serving", func(t *testing.T) { os.Remove(wgPath) }, host.Digest(v3), 4, 2,
			[]string{host.Digest(junk), host.Digest(v3)}},
		{"module back: nothing new", write(wgPath, v3), host.Digest(v3), 4, 2, []string{host.Digest(junk), host.Digest(v3)}},
		{"module back: still nothing new", nil, host.Digest(v3), 4, 2, []string{host.Digest(junk), host.Digest(v3)}},
	}
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) {
			if st.change != nil {
				st.change(t)
			}
			if err := f.srv.Scan(context.Background()); err != nil {
				t.Fatal(err)
			}
			wg := f.slotInfo(t, "WriteGate")
			if wg.Current.Digest != st.serving || wg.Current.Number != st.number {
				t.Fatalf("WriteGate serves %s #%d, want %s #%d", wg.Current.Digest, wg.Current.Number, st.serving, st.number)
			}
			var refused []string
			for _, r := range wg.Refused {
				refused = append(refused, r.Digest)
			}
			if strings.Join(refused, ",") != strings.Join(st.refused, ",") {
				t.Fatalf("refused %v, want %v", refused, st.refused)
			}
			if env := f.slotInfo(t, "env"); env.Current.Number != st.env {
				t.Fatalf("env serves #%d, want #%d", env.Current.Number, st.env)
			}
		}) {
			t.FailNow()
		}
	}

	// The refusals as GET /admin/v1/slots/WriteGate shows them, and the
	// warnings logged for them.
	wg := f.slotInfo(t, "WriteGate")
	wantReasons := []string{
		"server: slot WriteGate: candidate: host: compile writegate.wasm: module does not compile: host: module cannot be instrumented: meter: section headers: truncated or bad encoding at byte 10: malformed module",
		"server: slot WriteGate: sha256 " + host.Digest(v3) + ", pinned " + zeros + ": module digest does not match its pin",
	}
	for i, r := range wg.Refused {
		if r.Reason != wantReasons[i] || r.Origin != server.OriginWatch || r.File != "writegate.wasm" || r.Instance != "i-test" ||
			!r.Time.Equal(pluginClock) || r.Event != server.GenerationRefused || r.Number != 0 || r.Slot != "WriteGate" {
			t.Fatalf("refusal %d = %+v, want reason %s", i, r, wantReasons[i])
		}
	}
	warns := f.log.find(slog.LevelWarn, "plugin candidate refused")
	if len(warns) != 2 {
		t.Fatalf("%d refusals logged, want 2: %v", len(warns), warns)
	}
	for i, w := range warns {
		if w["slot"] != "WriteGate" || w["file"] != "writegate.wasm" || w["digest"] != wg.Refused[i].Digest || w["err"] != wantReasons[i] {
			t.Fatalf("warning %d = %v", i, w)
		}
	}
	if got := f.log.find(slog.LevelWarn, "plugin file missing; the serving generation stays"); len(got) != 1 || got[0]["slot"] != "WriteGate" {
		t.Fatalf("missing file warnings = %v", got)
	}

	// A rollback through the admin API serves v2 again and is recorded
	// beside the watcher's installs.
	var info server.SlotInfo
	if code, eb := f.do(t, "POST", "/admin/v1/slots/WriteGate/rollback", keyAdmin, "", &info); code != 200 {
		t.Fatalf("rollback: %d %+v", code, eb)
	}
	if info.Current.Number != 5 || info.Current.Digest != host.Digest(v2) {
		t.Fatalf("after rollback: %+v", info.Current)
	}
	recs, err := db.Generations(context.Background(), "WriteGate")
	if err != nil {
		t.Fatal(err)
	}
	type brief struct {
		event  server.GenerationEvent
		number uint64
		digest string
		origin string
	}
	want := []brief{
		{server.GenerationInstalled, 1, host.Digest(v1), server.OriginStart},
		{server.GenerationInstalled, 2, host.Digest(v2), server.OriginWatch},
		{server.GenerationRefused, 0, host.Digest(junk), server.OriginWatch},
		{server.GenerationRefused, 0, host.Digest(v3), server.OriginWatch},
		{server.GenerationInstalled, 4, host.Digest(v3), server.OriginWatch},
		{server.GenerationRolledBack, 5, host.Digest(v2), server.OriginAdmin},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		r := recs[i]
		if (brief{r.Event, r.Number, r.Digest, r.Origin}) != w || r.Instance != "i-test" {
			t.Fatalf("record %d = %+v, want %+v", i, r, w)
		}
	}
	envRecs, _ := db.Generations(context.Background(), "env")
	if len(envRecs) != 2 || envRecs[1].Event != server.GenerationInstalled || envRecs[1].Digest != envRecs[0].Digest || envRecs[1].File != "env.wasm" {
		t.Fatalf("env records = %+v", envRecs)
	}
}

// TestAdminRecordsGenerations: the admin API's installs, refusals and
// rollbacks go to the generation log too, and GET shows the refusals.
func TestAdminRecordsGenerations(t *testing.T) {
	t.Parallel()
	gens := server.NewMemoryGenerations()
	opts, _ := scenarioOptions(t)
	h, err := host.New(host.Options{CacheDir: testdata.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	opts.Host, opts.Generations, opts.Instance = h, gens, "i-admin"
	native(&opts)
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(hs.Close)
	f := &fixture{srv: srv, ts: hs}
	good, goodv2 := host.Digest(testdata.Bytes(t, "good")), host.Digest(testdata.Bytes(t, "goodv2"))
	for _, st := range []struct {
		method, path, body string
		status             int
	}{
		{"PUT", "/admin/v1/slots/Good", install(t, "good", ""), 201},
		{"PUT", "/admin/v1/slots/Good", install(t, "goodv2", good), 422},
		{"PUT", "/admin/v1/slots/Good", install(t, "goodv2", ""), 200},
		{"POST", "/admin/v1/slots/Good/rollback", "", 200},
	} {
		if code, eb := f.do(t, st.method, st.path, keyAdmin, st.body, nil); code != st.status {
			t.Fatalf("%s %s: %d %+v", st.method, st.path, code, eb)
		}
	}
	recs, _ := gens.Generations(context.Background(), "Good")
	want := []string{
		"installed 1 " + good + " ",
		"refused 0 " + goodv2 + " server: slot Good: sha256 " + goodv2 + ", pinned " + good + ": module digest does not match its pin",
		"installed 2 " + goodv2 + " ",
		"rolled_back 3 " + good + " ",
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, r := range recs {
		if got := strings.Join([]string{string(r.Event), strconv.FormatUint(r.Number, 10), r.Digest, r.Reason}, " "); got != want[i] ||
			r.Origin != server.OriginAdmin || r.File != "" || r.Instance != "i-admin" || r.Slot != "Good" {
			t.Fatalf("record %d = %+v\nwant %s", i, r, want[i])
		}
	}
	var info server.SlotInfo
	f.do(t, "GET", "/admin/v1/slots/Good", keyAdmin, "", &info)
	if len(info.Refused) != 1 || info.Refused[0].Digest != goodv2 || info.Refused[0].Reason != recs[1].Reason {
		t.Fatalf("refused = %+v", info.Refused)
	}
}

// TestWatch runs the watcher's loop: a module dropped in the directory
// serves within the (generous) deadline, and Watch returns when its
// context ends.
func TestWatch(t *testing.T) {
	t.Parallel()
	f := newPluginFixture(t, pluginDir(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Watch(ctx, 5*time.Millisecond) }()
	next := rebuilt(firstPartyModules(t)["argpolicy.wasm"], "v2")
	writeFile(t, filepath.Join(f.dir, "argpolicy.wasm"), next)
	deadline := time.Now().Add(60 * time.Second)
	for f.slotInfo(t, "ArgPolicy").Current.Digest != host.Digest(next) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not install the new ArgPolicy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if n := f.slotInfo(t, "ArgPolicy").Current.Number; n != 2 {
		t.Fatalf("ArgPolicy generation %d, want 2", n)
	}
}

// TestWatchConfig: Watch and Scan need a plugin directory, and Watch a
// positive interval.
func TestWatchConfig(t *testing.T) {
	t.Parallel()
	opts, _ := scenarioOptions(t)
	opts.AdminKeys = nil
	native(&opts)
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	withDir := opts
	withDir.Plugins = t.TempDir()
	srvDir, err := server.New(withDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		run  func() error
		msg  string
	}{
		{"watch without a directory", func() error { return srv.Watch(context.Background(), time.Second) },
			"server: invalid options: watching needs a plugin directory and a positive interval"},
		{"watch every 0", func() error { return srvDir.Watch(context.Background(), 0) },
			"server: invalid options: watching needs a plugin directory and a positive interval"},
		{"scan without a directory", func() error { return srv.Scan(context.Background()) },
			"server: invalid options: no plugin directory"},
		{"load without a host", func() error { return srvDir.LoadPlugins(context.Background()) },
			"server: invalid options: a plugin directory without a plugin host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, server.ErrConfig) || err.Error() != tt.msg {
				t.Fatalf("got %v, want %s", err, tt.msg)
			}
		})
	}
}
