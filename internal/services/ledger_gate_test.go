package services

import (
	"strings"
	"testing"

	"github.com/agentwarden/warden/contract"
)

func TestLedgerServices(t *testing.T) {
	t.Parallel()
	const bound = `{"title":"Q3","spaceId":7}`
	key := contract.IdempotencyKey("w", []string{"title"}, []byte(bound))
	req := func(state string) []byte {
		return []byte(`{"tool":"w","callId":"c1","bound":` + bound + `,"contract":{"sideEffect":"WRITE","idempotencyKey":["title"],"success":{"path":"ok","op":"TRUTHY"}},` +
			`"result":{"outcome":"SUCCESS","text":"done"},"state":{` + state + `}}`)
	}
	d, _ := Call("digest", req(""), []byte("bound"))
	digest := string(d)
	entries := func(s string) string { return `"state.ledger":{"entries":[` + s + `],"bypassTools":["x","w"]}` }
	cases := []struct {
		name, state, want string
	}{
		{"no entry", ``, key + ledgerSep + digest + ledgerSep + ledgerSep + "-1" + ledgerSep + "0" + ledgerSep + "1" + ledgerSep + "0"},
		{"entry, listed", entries(`{"tool":"o","key":"` + key + `","state":"STARTED"},{"tool":"w","key":"` + key + `","state":"UNKNOWN"}`),
			key + ledgerSep + digest + ledgerSep + "UNKNOWN" + ledgerSep + "1" + ledgerSep + "0" + ledgerSep + "1" + ledgerSep + "1"},
		{"business failure reads as failed", entries(`{"tool":"w","key":"` + key + `","state":"SUCCESS","businessOk":false}`),
			key + ledgerSep + digest + ledgerSep + "FAILED" + ledgerSep + "0" + ledgerSep + "0" + ledgerSep + "1" + ledgerSep + "1"},
		{"approved", `"state.approval":{"approved":{"tool":"w","argsDigest":"` + digest + `"}}`,
			key + ledgerSep + digest + ledgerSep + ledgerSep + "-1" + ledgerSep + "1" + ledgerSep + "1" + ledgerSep + "0"},
		{"approval of other arguments", `"state.approval":{"approved":{"tool":"w","argsDigest":"x"}}`,
			key + ledgerSep + digest + ledgerSep + ledgerSep + "-1" + ledgerSep + "0" + ledgerSep + "1" + ledgerSep + "0"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Call("ledger.lookup", req(tt.state), nil)
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
	t.Run("reserve", func(t *testing.T) {
		t.Parallel()
		got, err := Call("ledger.reserve", req(""), []byte("k"+ledgerSep+"d"+ledgerSep+"1"))
		if want := `{"tool":"w","key":"k","argsDigest":"d","callId":"c1","approved":true}`; err != nil || string(got) != want {
			t.Fatalf("got %s, %v; want %s", got, err, want)
		}
		if _, err := Call("ledger.reserve", req(""), []byte("k")); err == nil {
			t.Fatal("malformed input accepted")
		}
	})
	t.Run("settle", func(t *testing.T) {
		t.Parallel()
		got, err := Call("ledger.settle", req(""), []byte("k"+ledgerSep+"SUCCESS"+ledgerSep+"1"))
		want := `{"tool":"w","key":"k","state":"SUCCESS","businessOk":true,"result":{"outcome":"SUCCESS","text":"done","message":"done"}}`
		if err != nil || string(got) != want {
			t.Fatalf("got %s, %v\nwant %s", got, err, want)
		}
		got, _ = Call("ledger.settle", req(""), []byte("k"+ledgerSep+"UNKNOWN"))
		if !strings.Contains(string(got), `"state":"UNKNOWN","result"`) {
			t.Fatalf("unknown settle = %s", got)
		}
	})
}
