package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/internal/services"
)

// TestLeanInput: a guest built with abi/guest (it exports
// abi.ExportLeanInput) is given an after-phase request without the
// response member, so that the response the result's data repeats is
// copied into it once; the primitives still answer every path under
// "response" as before. Bytes a caller hands to Invoke go as they are.
func TestLeanInput(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	p := load(t, h, "lean", host.Policy{})
	const resp = `{"items":[{"name":"a","id":1}],"code":200}` // keys not in canonical order
	req := func() *abi.Request {
		o := abi.Success("ok", json.RawMessage(resp))
		return &abi.Request{Phase: abi.PhaseAfter, Tool: "list_items", Args: json.RawMessage(`{}`),
			Result: &o, Response: json.RawMessage(resp)}
	}
	sum := sha256.Sum256([]byte(resp))
	digest, err := services.Digest([]byte(`{"response":`+resp+`}`), "response")
	if err != nil {
		t.Fatal(err)
	}
	type report struct {
		RawValid, RawResponse, RawData bool
		Response, Data                 string
		Code, Size                     int
		Hash, Digest                   string
	}
	want := func(rawResponse bool) report {
		return report{RawValid: true, RawResponse: rawResponse, RawData: true, Response: resp,
			Data: resp, Code: 200, Size: len(resp), Hash: hex.EncodeToString(sum[:]), Digest: hex.EncodeToString(digest[:])}
	}
	ctx := context.Background()
	raw := req().AppendJSON(nil)
	tests := []struct {
		name string
		call func() (abi.Verdict, error)
		want report
	}{
		{"guard", func() (abi.Verdict, error) { return p.Guard(ctx, "", req()), nil }, want(false)},
		{"envelope", func() (abi.Verdict, error) {
			var env host.Envelope
			env.Set(req())
			return p.GuardEnvelope(ctx, "", &env), nil
		}, want(false)},
		{"invoke", func() (abi.Verdict, error) { return p.Invoke(ctx, "", raw) }, want(true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.call()
			if err != nil || v.Observation == nil || v.Observation.Outcome != abi.OutcomeSuccess {
				t.Fatalf("%+v, %v", v, err)
			}
			var got report
			if err := json.Unmarshal(v.Observation.Data, &got); err != nil {
				t.Fatalf("%s: %v", v.Observation.Data, err)
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
