//go:build !wasip1

package guest

import (
	"context"
	"crypto/sha256"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
)

// TestHashNative: Hash is the SHA-256 of the raw text the envelope holds,
// spacing and key order as they are, and false for a path that matches
// nothing.
func TestHashNative(t *testing.T) {
	t.Parallel()
	raw := `{ "b" : 1, "a":[1, 2.50] }`
	var got [DigestSize]byte
	var ok, none bool
	m := abi.Manifest{Name: "hashes", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseAfter}}
	n, err := NewNative(Plugin{Manifest: m, Handle: func(c *Call) {
		got, ok = c.Hash("response")
		_, none = c.Hash("response.absent")
		c.Pass(nil)
	}}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Call(context.Background(), []byte(`{"tool":"t","response":`+raw+`}`)); err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256([]byte(raw)); got != want || !ok || none {
		t.Fatalf("Hash = %x, %v, missing %v; want %x, true, false", got, ok, none, want)
	}
}

// TestParseItems decodes the host's items answers as the SDK sees them:
// an array's object items with their members, scalar and nested items, a
// single object, a missing path and a limit.
func TestParseItems(t *testing.T) {
	t.Parallel()
	req := []byte(`{"a":[{"id":1,"t":"x\ty","n":null,"o":{"z":1},"f":1.50},"s",[2],false],"o":{"k":"v"}}`)
	type want struct {
		kind    byte
		items   []ItemValue
		members [][]Member
	}
	tests := []struct {
		path  string
		limit int
		want  want
	}{
		{"a", 10, want{WalkArray,
			[]ItemValue{{WalkObject, "", ""}, {WalkString, `"s"`, "s"}, {WalkArray, "", ""}, {WalkFalse, "false", "false"}},
			[][]Member{{{"id", ItemValue{WalkNumber, "1", "1"}}, {"t", ItemValue{WalkString, `"x\ty"`, "x\ty"}},
				{"n", ItemValue{WalkNull, "null", ""}}, {"o", ItemValue{WalkObject, "", ""}}, {"f", ItemValue{WalkNumber, "1.50", "1.5"}}},
				nil, nil, nil}}},
		{"a", 2, want{WalkArray, []ItemValue{{WalkObject, "", ""}, {WalkString, `"s"`, "s"}}, nil}},
		{"o", 10, want{WalkObject, []ItemValue{{WalkObject, "", ""}}, [][]Member{{{"k", ItemValue{WalkString, `"v"`, "v"}}}}}},
		{"none", 10, want{WalkMissing, nil, nil}},
	}
	for _, tt := range tests {
		out, err := services.Items(req, tt.path, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		its := parseItems(string(out))
		var items []ItemValue
		var members [][]Member
		for i, it := range its.List {
			items = append(items, it.ItemValue)
			if tt.want.members != nil {
				members = append(members, its.MembersOf(i))
				if len(members[i]) == 0 {
					members[i] = nil
				}
			}
		}
		if its.Kind != tt.want.kind || !reflect.DeepEqual(items, tt.want.items) || !reflect.DeepEqual(members, tt.want.members) {
			t.Errorf("%s/%d: %c %+v %+v, want %c %+v %+v", tt.path, tt.limit, its.Kind, items, members, tt.want.kind, tt.want.items, tt.want.members)
		}
	}
}

// FuzzParseItems: no answer, however cut or corrupted, panics the guest,
// and every string it reads lies inside the answer.
func FuzzParseItems(f *testing.F) {
	good, _ := services.Items([]byte(`{"a":[{"id":1,"t":"x"},"s",null]}`), "a", 10)
	f.Add(string(good))
	f.Add(string(good[:14]))
	f.Add("[\x01\x00\x00\x00{\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\x7f")
	f.Fuzz(func(t *testing.T, b string) {
		its := parseItems(b)
		for _, m := range its.Members {
			if len(m.Key)+len(m.Raw)+len(m.Text) > len(b) {
				t.Fatalf("a member longer than the answer")
			}
		}
		for i := range its.List {
			_ = its.MembersOf(i)
		}
	})
}

// TestItemsNativeAsScan: the native runner answers items from the
// envelope's index exactly as services.Items answers from a scan of the
// whole envelope, and refuses the paths it refuses.
func TestItemsNativeAsScan(t *testing.T) {
	t.Parallel()
	req := []byte(`{"tool":"t","args":{"f":[{"a":1},"x",[2]]},"response":{"data":{"records":[{"id":1,"t":"a\"b"},{"id":2,"t":null,"id":3}]}},"state":{"node":{"ids":[1,2]}}}`)
	m := abi.Manifest{Name: "lists", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseAfter}}
	for _, tt := range []struct {
		path  string
		limit int
	}{
		{"response.data.records", 10},
		{"response.data.records", 1},
		{"response.data.records.#.id", 10},
		{"response.data.records|@reverse", 10},
		{"args.f", 10},
		{"args", 10},
		{"state.node.ids", 10},
		{"response.absent", 10},
		{"tool", 10},
		{strings.Repeat("a.", services.MaxPathBytes), 10},
	} {
		var got Items
		n, err := NewNative(Plugin{Manifest: m, Handle: func(c *Call) {
			got = c.Items(tt.path, tt.limit)
			c.Pass(nil)
		}}, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		_, err = n.Call(context.Background(), req)
		var vio *abi.Violation
		if err != nil && !errors.As(err, &vio) {
			t.Fatal(err)
		}
		out, qerr := services.Items(req, tt.path, tt.limit)
		if qerr != nil {
			if vio == nil || vio.Kind != abi.ViolationHostRefused || vio.Detail != qerr.Error() || !reflect.DeepEqual(got, Items{}) {
				t.Errorf("%.20s: refused by the scan (%v), native answered %+v, violation %+v", tt.path, qerr, got, vio)
			}
			continue
		}
		if want := parseItems(string(out)); !reflect.DeepEqual(got, want) || vio != nil {
			t.Errorf("%s: native %+v, scan %+v (violation %+v)", tt.path, got, want, vio)
		}
	}
}

// TestSpliceNative: the parts a guest names through Parts become its
// effects as the host assembles them, one per payload; a value placed
// inside a literal string, an ungranted kind and an output over the limit
// void the call as the host's splice does.
func TestSpliceNative(t *testing.T) {
	t.Parallel()
	m := abi.Manifest{Name: "splices", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseAfter},
		Capabilities: []abi.Capability{abi.CapEffectEvidence}}
	req := []byte(`{"tool":"t","args":{"b":1, "a":"x"},"response":{ "rows" : [ {"id":1} , {"id":"é"} ] }}`)
	tests := []struct {
		name    string
		kind    string
		build   func(p *Parts)
		limit   int
		effects string
		err     string
	}{
		{"item", abi.EffectEvidenceRegister, func(p *Parts) {
			p.JSON(`{"r":`)
			p.Value("response.rows")
			p.JSON(`,"s":`)
			p.String("a\"b<")
			p.JSON(`,"l":`)
			p.StringOf(12, Text("t "), CanonicalText("args"))
			p.JSON(`,"e":`)
			p.StringOf(100, RawText("response"))
			p.JSON(`,"v":`)
			p.Leaves("response", 10)
			p.JSON(`,"n":`)
			p.Literal(func(b []byte) []byte { return append(b, "1.50"...) })
			p.JSON(`}`)
		}, 1 << 20, `evidence.register {"r":[{"id":1},{"id":"é"}],"s":"a\"b<","l":"t {\"a\":\"x\",\"…","e":"{\"rows\":[{\"id\":1},{\"id\":\"é\"}]}","v":["1","é"],"n":1.50}`, ""},
		{"records", abi.EffectEntityRecord, func(p *Parts) {
			p.JSON(`{"id":1}`)
			p.End()
			p.RawJSON([]byte(`{"id":2}`))
			p.End()
		}, 1 << 20, "entity.record {\"id\":1}\nentity.record {\"id\":2}", ""},
		{"value inside a string", abi.EffectEntityRecord, func(p *Parts) {
			p.JSON(`{"a":"x`)
			p.Value("tool")
			p.JSON(`"}`)
		}, 1 << 20, "", "bad_data"},
		{"not granted", abi.EffectLedgerReserve, func(p *Parts) { p.JSON(`{}`) }, 1 << 20, "", "effect_not_granted"},
		{"over the output limit", abi.EffectEntityRecord, func(p *Parts) {
			p.JSON(`[`)
			p.Value("response")
			p.JSON(`,`)
			p.Value("response")
			p.JSON(`]`)
		}, 60, "", "output_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, err := NewNative(Plugin{Manifest: m, Handle: func(c *Call) {
				var p Parts
				tt.build(&p)
				c.Splice(tt.kind, &p)
				c.Pass(nil)
			}}, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			v, err := n.Call(context.Background(), req)
			var violation *abi.Violation
			switch {
			case tt.err != "" && !(errors.As(err, &violation) && string(violation.Kind) == tt.err):
				t.Fatalf("error %v, want a %s violation", err, tt.err)
			case tt.err == "" && err != nil:
				t.Fatal(err)
			}
			var got []string
			for _, e := range v.Effects {
				got = append(got, e.Kind+" "+string(e.Payload))
			}
			if strings.Join(got, "\n") != tt.effects {
				t.Fatalf("effects\n%s\nwant\n%s", strings.Join(got, "\n"), tt.effects)
			}
		})
	}
}
