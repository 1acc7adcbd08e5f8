package control_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/control"
)

// TestFinishRules runs control.New's extra finish rules natively: they run
// only after the spec's gate accepted, in order, and the first refusal is
// the result.
func TestFinishRules(t *testing.T) {
	t.Parallel()
	var seen []string
	refuse := func(name string, when func(*control.FinishCheck) bool) control.FinishRule {
		return func(f *control.FinishCheck) *control.Refusal {
			seen = append(seen, name)
			if !when(f) {
				return nil
			}
			return &control.Refusal{Code: abi.CitationInvalid, Reason: name + " refused", Next: "cite " + f.Node.NodeID}
		}
	}
	p := control.New(control.Options{FinishRules: []control.FinishRule{
		refuse("uncited", func(f *control.FinishCheck) bool { return len(f.Cites) == 0 && len(f.Evidence.Items) > 0 }),
		refuse("second", func(f *control.FinishCheck) bool { return f.Contract.Outputs["site_id"] != nil }),
	}})
	if p.Manifest.Name != control.Plugin.Manifest.Name || len(p.Manifest.Tools) != len(control.Plugin.Manifest.Tools) {
		t.Fatalf("manifest %s with %d tools", p.Manifest.Name, len(p.Manifest.Tools))
	}
	n, err := guest.NewNative(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, output string
		open         bool
		want         string
		rules        []string
	}{
		{"the gate refuses first", "done", true, "REJECTED FINISH_OPEN_EVIDENCE", nil},
		{"the first rule refuses", "done", false, "REJECTED CITATION_INVALID uncited refused / cite n1", []string{"uncited"}},
		{"the second rule refuses", "done [ev:ev1]", false, "REJECTED CITATION_INVALID second refused / cite n1", []string{"uncited", "second"}},
	} {
		seen = nil
		req := finishRequest(t)
		req.Args = json.RawMessage(`{"output":` + mustString(tt.output) + `}`)
		if tt.open {
			req.State[string(abi.CapStateLedger)] = json.RawMessage(`{"entries":[{"tool":"create_site","key":"k","state":"STARTED","nodeId":"n1"}]}`)
		}
		raw, _ := json.Marshal(req)
		v, err := n.Call(context.Background(), raw)
		if err != nil {
			t.Fatal(err)
		}
		o := v.Observation
		got := o.Outcome.String() + " " + string(o.Code)
		if o.Code == abi.CitationInvalid {
			got += " " + o.Text + " / " + o.Next
		}
		if got != tt.want || len(seen) != len(tt.rules) {
			t.Errorf("%s: got %q after rules %v, want %q after %v", tt.name, got, seen, tt.want, tt.rules)
		}
	}
}

func mustString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
