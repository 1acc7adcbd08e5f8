package host_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/services"
)

// TestServices checks the host primitives as a guest sees them (query,
// exists, digest, validate), against the same primitives called in-process.
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
		Keys      string
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
	if got.Title != "Q3" || !got.Has || got.Keys != `["title","spaceId"]` {
		t.Errorf("query: %+v", got)
	}
}
