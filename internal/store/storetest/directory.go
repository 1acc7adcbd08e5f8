package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// RunDirectory is the conformance suite of store.Directory: open returns
// a new, empty directory.
func RunDirectory(t *testing.T, open func(t *testing.T) store.Directory) {
	t.Run("sessions", func(t *testing.T) { t.Parallel(); testSessions(t, open(t)) })
	t.Run("listing", func(t *testing.T) { t.Parallel(); testListing(t, open(t)) })
	t.Run("claim", func(t *testing.T) { t.Parallel(); testClaim(t, open(t)) })
	t.Run("claim race", func(t *testing.T) { t.Parallel(); testClaimRace(t, open(t)) })
	t.Run("instance address", func(t *testing.T) { t.Parallel(); testInstanceAddr(t, open(t)) })
	t.Run("tasks and events", func(t *testing.T) { t.Parallel(); testDocs(t, open(t)) })
	t.Run("approvals", func(t *testing.T) { t.Parallel(); testApprovals(t, open(t)) })
	t.Run("session states", func(t *testing.T) { t.Parallel(); testSessionStates(t, open(t)) })
}

var bg = context.Background()

func wantIs(t *testing.T, err, target error, text string) {
	t.Helper()
	if !errors.Is(err, target) || (text != "" && !strings.Contains(err.Error(), text)) {
		t.Fatalf("err %v, want %v containing %q", err, target, text)
	}
}

func newSession(t *testing.T, d store.Directory, id, owner string) {
	t.Helper()
	must(t, d.CreateSession(bg, store.Session{ID: id, Tenant: "acme", Created: Clock, Owner: owner}))
}

func testSessions(t *testing.T, d store.Directory) {
	created := Clock.Add(1234567 * time.Microsecond)
	must(t, d.CreateSession(bg, store.Session{ID: "s1", Tenant: "acme", Created: created, Owner: "i1"}))
	got, err := d.LookupSession(bg, "s1")
	must(t, err)
	if want := (store.Session{ID: "s1", Tenant: "acme", Created: created.Truncate(time.Millisecond), Owner: "i1"}); got != want {
		t.Fatalf("session %+v, want %+v", got, want)
	}
	wantIs(t, d.CreateSession(bg, store.Session{ID: "s1", Tenant: "other", Owner: "i2"}), store.ErrExists, "s1")
	if got, _ := d.LookupSession(bg, "s1"); got.Tenant != "acme" {
		t.Fatalf("a duplicate create changed the session: %+v", got)
	}
	for _, bad := range []store.Session{{Tenant: "acme", Owner: "i1"}, {ID: "s2", Owner: "i1"}, {ID: "s2", Tenant: "acme"}} {
		wantIs(t, d.CreateSession(bg, bad), store.ErrInvalid, "required")
	}
	_, err = d.LookupSession(bg, "s2")
	wantIs(t, err, store.ErrNotFound, "s2")
}

// A tenant's sessions list newest first, in pages that neither repeat nor
// skip one, sessions created in the same millisecond included.
func testListing(t *testing.T, d store.Directory) {
	at := func(ms int) time.Time { return Clock.Add(time.Duration(ms) * time.Millisecond) }
	for _, s := range []store.Session{
		{ID: "s_a", Tenant: "acme", Created: at(1), Owner: "i1"},
		{ID: "s_b", Tenant: "acme", Created: at(3).Add(400 * time.Microsecond), Owner: "i1"},
		{ID: "s_c", Tenant: "acme", Created: at(3), Owner: "i1"},
		{ID: "s_d", Tenant: "acme", Created: at(2), Owner: "i2"},
		{ID: "s_z", Tenant: "globex", Created: at(9), Owner: "i1"},
	} {
		must(t, d.CreateSession(bg, s))
	}
	var got []string
	var after store.Cursor
	for page := 0; ; page++ {
		list, err := d.Sessions(bg, "acme", after, 2)
		must(t, err)
		if len(list) == 0 {
			break
		}
		for _, s := range list {
			got = append(got, s.ID)
		}
		last := list[len(list)-1]
		after = store.Cursor{Created: last.Created, ID: last.ID}
		if page > 3 {
			t.Fatalf("no end: %v", got)
		}
	}
	// s_b and s_c share the millisecond 3 (sub-millisecond time is not
	// kept): the larger id first.
	if strings.Join(got, ",") != "s_c,s_b,s_d,s_a" {
		t.Fatalf("listing %v", got)
	}
	if list, _ := d.Sessions(bg, "nobody", store.Cursor{}, 10); len(list) != 0 || list == nil {
		t.Fatalf("sessions of nobody %#v", list)
	}
}

func testClaim(t *testing.T, d store.Directory) {
	now := Clock
	newSession(t, d, "s1", "i1")
	newSession(t, d, "s2", "i1")
	must(t, d.Heartbeat(bg, "i1", now.Add(10*time.Second)))
	must(t, d.Heartbeat(bg, "i2", now.Add(time.Minute)))
	steps := []struct {
		name, session, owner string
		at                   time.Duration
		prev                 string
		err                  error
	}{
		{"the owner claims its own", "s1", "i1", 0, "i1", nil},
		{"a live owner keeps it", "s1", "i2", 0, "i1", store.ErrOwned},
		{"until its lease runs out", "s1", "i2", 10 * time.Second, "i1", nil},
		{"the new owner is alive", "s1", "i1", 10 * time.Second, "i2", store.ErrOwned},
		{"no such session", "s9", "i1", 0, "", store.ErrNotFound},
	}
	for _, st := range steps {
		prev, err := d.Claim(bg, st.session, st.owner, now.Add(st.at))
		if !errors.Is(err, st.err) || prev != st.prev {
			t.Fatalf("%s: prev %q err %v, want %q %v", st.name, prev, err, st.prev, st.err)
		}
	}
	if s, _ := d.LookupSession(bg, "s1"); s.Owner != "i2" {
		t.Fatalf("owner %s", s.Owner)
	}
	// A released lease frees the instance's sessions at once; a renewed
	// one holds them again.
	must(t, d.Release(bg, "i1"))
	if prev, err := d.Claim(bg, "s2", "i2", now); err != nil || prev != "i1" {
		t.Fatalf("after release: %q %v", prev, err)
	}
	must(t, d.Heartbeat(bg, "i2", now.Add(time.Minute)))
	must(t, d.Heartbeat(bg, "i3", now.Add(time.Minute)))
	if _, err := d.Claim(bg, "s2", "i3", now); !errors.Is(err, store.ErrOwned) {
		t.Fatalf("renewed lease: %v", err)
	}
	must(t, d.ReleaseOthers(bg, "i3"))
	if prev, err := d.Claim(bg, "s2", "i3", now); err != nil || prev != "i2" {
		t.Fatalf("after release of the others: %q %v", prev, err)
	}
	// An owner that never beat is not alive.
	newSession(t, d, "s3", "ghost")
	if prev, err := d.Claim(bg, "s3", "i3", now); err != nil || prev != "ghost" {
		t.Fatalf("ghost owner: %q %v", prev, err)
	}
	wantIs(t, d.Heartbeat(bg, "", now), store.ErrInvalid, "instance")
}

// An instance's address sits beside its lease: advertised before or after
// the first beat, replaced by the next, kept when the lease ends.
func testInstanceAddr(t *testing.T, d store.Directory) {
	_, err := d.LookupInstance(bg, "i1")
	wantIs(t, err, store.ErrNotFound, "i1")
	must(t, d.Advertise(bg, "i1", "10.0.0.1:8080"))
	got, err := d.LookupInstance(bg, "i1")
	must(t, err)
	if want := (store.Instance{ID: "i1", Addr: "10.0.0.1:8080"}); got != want {
		t.Fatalf("advertised before the first beat: %+v, want %+v", got, want)
	}
	until := Clock.Add(time.Minute)
	must(t, d.Heartbeat(bg, "i1", until))
	must(t, d.Heartbeat(bg, "i2", until))
	must(t, d.Advertise(bg, "i1", "10.0.0.9:8080"))
	steps := []struct {
		id   string
		want store.Instance
	}{
		{"i1", store.Instance{ID: "i1", LeaseUntil: until, Addr: "10.0.0.9:8080"}},
		{"i2", store.Instance{ID: "i2", LeaseUntil: until}},
	}
	for _, st := range steps {
		got, err := d.LookupInstance(bg, st.id)
		must(t, err)
		if !got.LeaseUntil.Equal(st.want.LeaseUntil) || got.ID != st.want.ID || got.Addr != st.want.Addr || got.Sessions != 0 {
			t.Fatalf("%s: %+v, want %+v", st.id, got, st.want)
		}
	}
	must(t, d.Release(bg, "i1"))
	if got, err := d.LookupInstance(bg, "i1"); err != nil || !got.LeaseUntil.IsZero() || got.Addr != "10.0.0.9:8080" {
		t.Fatalf("released: %+v %v", got, err)
	}
	wantIs(t, d.Advertise(bg, "", "10.0.0.1:8080"), store.ErrInvalid, "required")
	wantIs(t, d.Advertise(bg, "i1", ""), store.ErrInvalid, "required")
}

// Instances racing for a dead owner's session: exactly one wins.
func testClaimRace(t *testing.T, d store.Directory) {
	newSession(t, d, "s1", "dead")
	const n = 8
	for i := range n {
		must(t, d.Heartbeat(bg, fmt.Sprintf("i%d", i), Clock.Add(time.Minute)))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = d.Claim(bg, "s1", fmt.Sprintf("i%d", i), Clock) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrOwned):
			t.Fatal(err)
		}
	}
	if won != 1 {
		t.Fatalf("%d instances own the session", won)
	}
}

func testDocs(t *testing.T, d store.Directory) {
	newSession(t, d, "s1", "i1")
	newSession(t, d, "s2", "i1")
	// Documents come back byte for byte, key order and spacing included.
	t2 := json.RawMessage(`{"id":"t2", "status":"RUNNING","z":1,"a":"中文"}`)
	must(t, d.PutTask(bg, "s1", store.Doc{ID: "t2", Seq: 2, Doc: t2}))
	must(t, d.PutTask(bg, "s1", store.Doc{ID: "t1", Seq: 1, Doc: json.RawMessage(`{"id":"t1","status":"RUNNING"}`)}))
	must(t, d.PutTask(bg, "s1", store.Doc{ID: "t1", Seq: 1, Doc: json.RawMessage(`{"id":"t1","status":"DONE"}`)}))
	must(t, d.PutTask(bg, "s2", store.Doc{ID: "t1", Seq: 1, Doc: json.RawMessage(`{"other":true}`)}))
	tasks, err := d.Tasks(bg, "s1")
	must(t, err)
	if len(tasks) != 2 || tasks[0].ID != "t1" || string(tasks[0].Doc) != `{"id":"t1","status":"DONE"}` || string(tasks[1].Doc) != string(t2) {
		t.Fatalf("tasks %+v", tasks)
	}
	if tasks, _ := d.Tasks(bg, "s9"); len(tasks) != 0 || tasks == nil {
		t.Fatalf("tasks of no session %#v", tasks)
	}
	wantIs(t, d.PutTask(bg, "s9", store.Doc{ID: "t1", Doc: json.RawMessage(`{}`)}), store.ErrNotFound, "s9")
	wantIs(t, d.PutTask(bg, "s1", store.Doc{ID: "t3", Doc: json.RawMessage(`{"id":`)}), store.ErrInvalid, "not JSON")
	wantIs(t, d.PutTask(bg, "s1", store.Doc{Doc: json.RawMessage(`{}`)}), store.ErrInvalid, "id")

	for seq := int64(1); seq <= 3; seq++ {
		must(t, d.AppendEvent(bg, "s1", store.Doc{Seq: seq, Doc: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq))}))
	}
	wantIs(t, d.AppendEvent(bg, "s1", store.Doc{Seq: 2, Doc: json.RawMessage(`{"again":true}`)}), store.ErrExists, "event 2")
	wantIs(t, d.AppendEvent(bg, "s9", store.Doc{Seq: 1, Doc: json.RawMessage(`{}`)}), store.ErrNotFound, "s9")
	wantIs(t, d.AppendEvent(bg, "s1", store.Doc{Seq: 4, Doc: json.RawMessage(`nope`)}), store.ErrInvalid, "not JSON")
	evs, err := d.Events(bg, "s1", 1)
	must(t, err)
	if len(evs) != 2 || evs[0].Seq != 2 || string(evs[1].Doc) != `{"seq":3}` {
		t.Fatalf("events %+v", evs)
	}
	if evs, _ := d.Events(bg, "s2", 0); len(evs) != 0 || evs == nil {
		t.Fatalf("events of s2 %#v", evs)
	}
}

func testApprovals(t *testing.T, d store.Directory) {
	newSession(t, d, "s1", "i1")
	add := func(id, node string) {
		must(t, d.AddApproval(bg, store.Approval{ID: id, Tenant: "acme", Session: "s1", Node: node, Status: "PENDING",
			Doc: json.RawMessage(`{"id":"` + id + `","status":"PENDING"}`)}))
	}
	add("ap_b", "n1")
	add("ap_a", "n2")
	wantIs(t, d.AddApproval(bg, store.Approval{ID: "ap_b", Tenant: "x", Session: "s1", Status: "PENDING", Doc: json.RawMessage(`{}`)}), store.ErrExists, "ap_b")
	wantIs(t, d.AddApproval(bg, store.Approval{ID: "ap_c", Session: "s1", Status: "PENDING", Doc: json.RawMessage(`{}`)}), store.ErrInvalid, "required")
	wantIs(t, d.AddApproval(bg, store.Approval{ID: "ap_c", Tenant: "acme", Session: "s1", Status: "PENDING", Doc: json.RawMessage(`{`)}), store.ErrInvalid, "not JSON")
	a, err := d.Approval(bg, "ap_b")
	must(t, err)
	if a.Tenant != "acme" || a.Session != "s1" || a.Node != "n1" || a.Status != "PENDING" || string(a.Doc) != `{"id":"ap_b","status":"PENDING"}` {
		t.Fatalf("approval %+v", a)
	}
	_, err = d.Approval(bg, "ap_z")
	wantIs(t, err, store.ErrNotFound, "ap_z")
	list, err := d.Approvals(bg, "s1")
	must(t, err)
	if len(list) != 2 || list[0].ID != "ap_b" || list[1].ID != "ap_a" {
		t.Fatalf("approvals %+v", list)
	}
	steps := []struct {
		id, from, to string
		moved        bool
		err          error
	}{
		{"ap_b", "PENDING", "CONFIRM", true, nil},
		{"ap_b", "PENDING", "REJECT", false, nil},
		{"ap_a", "CONFIRM", "STALE", false, nil},
		{"ap_z", "PENDING", "CONFIRM", false, store.ErrNotFound},
	}
	for _, st := range steps {
		moved, err := d.MoveApproval(bg, st.id, st.from, st.to, json.RawMessage(`{"status":"`+st.to+`"}`))
		if moved != st.moved || !errors.Is(err, st.err) {
			t.Fatalf("move %s %s→%s: %v %v", st.id, st.from, st.to, moved, err)
		}
	}
	if a, _ := d.Approval(bg, "ap_b"); a.Status != "CONFIRM" || string(a.Doc) != `{"status":"CONFIRM"}` {
		t.Fatalf("approval %+v", a)
	}
	// Concurrent decisions on one approval: one of them takes it.
	add("ap_r", "n3")
	var wg sync.WaitGroup
	var mu sync.Mutex
	moved := 0
	for i := range 8 {
		wg.Go(func() {
			ok, err := d.MoveApproval(bg, "ap_r", "PENDING", fmt.Sprintf("D%d", i), json.RawMessage(`{}`))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				moved++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if moved != 1 {
		t.Fatalf("%d decisions took one approval", moved)
	}
}
