package writegate

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest/canonical"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/guards/internal/envelope"
	"github.com/tidwall/gjson"
)

func TestLedgerFacts(t *testing.T) {
	t.Parallel()
	const bound = `{"title":"Q3","spaceId":7}`
	key := contract.IdempotencyKey("w", []string{"title"}, []byte(bound))
	req := func(state string) []byte {
		return []byte(`{"tool":"w","callId":"c1","bound":` + bound + `,"contract":{"sideEffect":"WRITE","idempotencyKey":["title"],"success":{"path":"ok","op":"TRUTHY"}},` +
			`"result":{"outcome":"SUCCESS","text":"done"},"state":{` + state + `}}`)
	}
	sum := sha256.Sum256(canonical.JSON(gjson.Parse(bound)))
	digest := hex.EncodeToString(sum[:])
	entries := func(s string) string { return `"state.ledger":{"entries":[` + s + `],"bypassTools":["x","w"]}` }
	cases := []struct {
		name, state string
		want        facts
	}{
		{"no entry", ``, facts{key: key, digest: digest, index: -1, confirm: true}},
		{"entry, listed", entries(`{"tool":"o","key":"` + key + `","state":"STARTED"},{"tool":"w","key":"` + key + `","state":"UNKNOWN"}`),
			facts{key: key, digest: digest, state: abi.LedgerUnknown, index: 1, confirm: true, listed: true}},
		{"business failure reads as failed", entries(`{"tool":"w","key":"` + key + `","state":"SUCCESS","businessOk":false}`),
			facts{key: key, digest: digest, state: abi.LedgerFailed, index: 0, confirm: true, listed: true}},
		{"approved", `"state.approval":{"approved":{"tool":"w","argsDigest":"` + digest + `"}}`,
			facts{key: key, digest: digest, index: -1, approved: true, confirm: true}},
		{"approval of other arguments", `"state.approval":{"approved":{"tool":"w","argsDigest":"x"}}`,
			facts{key: key, digest: digest, index: -1, confirm: true}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ledgerFacts(envelope.Bytes(req(tt.state)), digest)
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
	t.Run("reserve", func(t *testing.T) {
		t.Parallel()
		got := reserve(envelope.Bytes(req("")), facts{key: "k", digest: "d", approved: true})
		if want := `{"tool":"w","key":"k","argsDigest":"d","callId":"c1","approved":true}`; string(got) != want {
			t.Fatalf("got %s; want %s", got, want)
		}
	})
	t.Run("settle", func(t *testing.T) {
		t.Parallel()
		yes := true
		got := settlement(envelope.Bytes(req("")), "k", abi.LedgerSuccess, &yes)
		want := `{"tool":"w","key":"k","state":"SUCCESS","businessOk":true,"result":{"outcome":"SUCCESS","text":"done","message":"done"}}`
		if string(got) != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
		got = settlement(envelope.Bytes(req("")), "k", abi.LedgerUnknown, nil)
		want = `{"tool":"w","key":"k","state":"UNKNOWN","result":{"outcome":"SUCCESS","text":"done","message":"done"}}`
		if string(got) != want {
			t.Fatalf("unknown settle = %s", got)
		}
	})
	t.Run("invalid contract", func(t *testing.T) {
		t.Parallel()
		if _, err := ledgerFacts(envelope.Bytes(`{"tool":"w","contract":{"sideEffect":"WRITE"}}`), digest); err == nil {
			t.Fatal("a WRITE contract without idempotencyKey parsed")
		}
	})
}
