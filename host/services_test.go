package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/services"
)

// TestServices checks the host primitives as a guest sees them (query,
// exists, digest, canonical, hash, validate, walk, items), against the same primitives called in-process.
func TestServices(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "services", host.Policy{})
	req := before(`{"title":"Q3","spaceId":7}`)
	v := p.Guard(context.Background(), "", req)
	if v.Observation == nil {
		t.Fatalf("%+v", v)
	}
	var got struct {
		Digest    []byte
		DigestHex string
		Missing   string
		Problems  []struct{ Path, Keyword, Message string }
		SchemaErr string
		BadSchema string
		Title     string
		Has       bool
		HasBig    bool
		Keys      string
		Walk      []any
		WalkNone  int
		Canonical string
		Hash      []any
		Items     []any
	}
	if err := json.Unmarshal(v.Observation.Data, &got); err != nil {
		t.Fatal(err)
	}
	want, err := services.Digest([]byte(`{"args":{"spaceId":7,"title":"Q3"}}`), "args")
	if err != nil {
		t.Fatal(err)
	}
	null, _ := services.Digest([]byte(`{}`), "args")
	if !reflect.DeepEqual(got.Digest, want[:]) || got.DigestHex != hex.EncodeToString(want[:]) || got.Missing != hex.EncodeToString(null[:]) {
		t.Errorf("digest = %x / %s / %s, want %x / null %x", got.Digest, got.DigestHex, got.Missing, want, null)
	}
	wantProblems := []struct{ Path, Keyword, Message string }{
		{"spaceId", "type", "expected string, got number"},
		{"body", "required", "required property is missing"},
	}
	if !reflect.DeepEqual(got.Problems, wantProblems) || got.SchemaErr != "" {
		t.Errorf("validate = %+v, %q", got.Problems, got.SchemaErr)
	}
	if got.BadSchema == "" {
		t.Error("an invalid schema validated")
	}
	// hash: the raw text as the request holds it, not its canonical form.
	raw := sha256.Sum256([]byte(`{"title":"Q3","spaceId":7}`))
	if !reflect.DeepEqual(got.Hash, []any{base64.StdEncoding.EncodeToString(raw[:]), true, false}) {
		t.Errorf("hash = %v, want %x, true, false", got.Hash, raw)
	}
	if want := []any{"[", 1.0, "{", []any{`title=s"Q3"|Q3`, "spaceId=#7|7"}}; !reflect.DeepEqual(got.Items, want) {
		t.Errorf("items = %v, want %v", got.Items, want)
	}
	if got.Canonical != `{"a":[1,2.5],"b":1}` {
		t.Errorf("canonical = %s", got.Canonical)
	}
	if !reflect.DeepEqual(got.Walk, []any{"{", 2.0, []any{"Q3", "7"}}) || got.WalkNone != 0 {
		t.Errorf("walk = %v, missing %d", got.Walk, got.WalkNone)
	}
	if got.Title != "Q3" || !got.Has || got.HasBig || got.Keys != `["title","spaceId"]` {
		t.Errorf("query: %+v", got)
	}
}

// TestExistsCopiesNothing checks that Has on a value over the plugin's
// output limit answers without voiding the call: exists copies nothing into
// the guest, so nothing counts against the output limit.
func TestExistsCopiesNothing(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	pol := host.Policy{}
	pol.Limits.MaxOutputBytes = 4096
	p := load(t, h, "services", pol)
	v := p.Guard(context.Background(), "", before(`{"title":"Q3","spaceId":7,"big":"`+strings.Repeat("x", 8<<10)+`"}`))
	if v.Observation == nil || v.Observation.Code != "" {
		t.Fatalf("%+v", v)
	}
	var got struct{ Has, HasBig bool }
	if err := json.Unmarshal(v.Observation.Data, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Has || !got.HasBig {
		t.Errorf("exists = %+v, want both true", got)
	}
}
