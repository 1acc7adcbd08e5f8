package sqlstore_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store/sqlstore"
	"github.com/agentwarden/warden/internal/store/storetest"
)

// crashEnv makes the test binary the process that is killed: it reserves a
// write, says so on stdout and waits for SIGKILL without closing anything.
const crashEnv = "WARDEN_SQLSTORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashEnv); spec != "" {
		crashChild(spec)
		return
	}
	os.Exit(m.Run())
}

func crashChild(spec string) {
	var c struct{ Dialect, DSN string }
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		panic(err)
	}
	db, err := sqlstore.Open(context.Background(), sqlstore.Dialect(c.Dialect), c.DSN)
	if err != nil {
		panic(err)
	}
	s, err := db.Session(context.Background(), storetest.Options())
	if err != nil {
		panic(err)
	}
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(s.CreateTask(state.Task{ID: "t1"}))
	must(s.CreateNode(state.Node{ID: "n1", TaskID: "t1"}))
	must(s.Apply("n1", []abi.Effect{{Kind: abi.EffectLedgerReserve,
		Payload: json.RawMessage(`{"tool":"create_site","key":"k1","argsDigest":"d1","callId":"c1"}`)}}))
	must(s.RecordCall("t1", "c1", json.RawMessage(`{"title":"x"}`)))
	os.Stdout.WriteString("reserved\n")
	time.Sleep(time.Minute) // the write tool is "running" when SIGKILL comes
}

// TestKilledMidWrite kills a process that reserved a write and did not
// settle it: the entry is on disk as STARTED, and RecoverWrites in the next
// process makes it UNKNOWN_PRE_CALL.
func TestKilledMidWrite(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		d    sqlstore.Dialect
		dsn  func(testing.TB) string
	}{
		{"sqlite", sqlstore.SQLite, sqliteDSN},
		{"postgres", sqlstore.Postgres, postgresDSN},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dsn := tt.dsn(t)
			spec, _ := json.Marshal(struct{ Dialect, DSN string }{string(tt.d), dsn})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashEnv+"="+string(spec))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len("reserved\n"))
			if _, err := out.Read(buf); err != nil || string(buf) != "reserved\n" {
				cmd.Process.Kill()
				t.Fatalf("child: %q %v", buf, err)
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			cmd.Wait()

			s := open(t, tt.d, dsn)
			got, err := s.RecoverWrites()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Key != "k1" || got[0].State != abi.LedgerUnknownPreCall {
				t.Fatalf("recovered %+v", got)
			}
			if a, ok := s.CallArgs("t1", "c1"); !ok || string(a) != `{"title":"x"}` {
				t.Fatalf("call args %s %v", a, ok)
			}
			l, _ := s.Ledger("t1")
			if len(l) != 1 || l[0].State != abi.LedgerUnknownPreCall {
				t.Fatalf("ledger %+v", l)
			}
		})
	}
}
