package services

import (
	"strings"
	"testing"
)

func TestEvidenceServices(t *testing.T) {
	t.Parallel()
	const c = `"contract":{"success":{"path":"code","op":"EQ","value":0},"extracts":[{"key":"rows","path":"rows","entity":{"type":"site"}}]}`
	req := func(outcome, resp, extra string) []byte {
		return []byte(`{"tool":"s","callId":"c1","bound":{"q":1},` + c + `,"result":{"outcome":"` + outcome + `","code":"TOOL_TIMEOUT","text":"完成"},"response":` + resp + extra + `}`)
	}
	id := evidenceID([]byte(`{"callId":"c1"}`), "", nil)
	cases := []struct {
		name, outcome, resp, extra string
		header                     string
		contains                   []string
	}{
		{"with data", "SUCCESS", `{"code":0,"rows":[{"id":"a","name":"A"}]}`, "", "-" + "\x1f" + id + "\x1f41\x1f1\x1f16384",
			[]string{`"result":"success_with_data"`, `"values":["a","A"]`, `"retrievedAt":"T"`, `"locator":"s {\"q\":1}"`}},
		{"empty", "SUCCESS", `{"code":0,"rows":[]}`, "", "-\x1f" + id + "\x1f20\x1f0\x1f16384", []string{`"result":"success_empty","empty":true`}},
		{"failure", "FAILED", `null`, "", "-\x1f" + id + "\x1f4\x1f0\x1f16384", []string{`"status":"FAILED","businessOk":false,"result":"failure","empty":false`}},
		{"truncated", "SUCCESS", `{"code":0,"rows":[],"pad":"` + strings.Repeat("x", 100) + `"}`, `,"config":{"maxPayloadBytes":64}`,
			"T\x1f" + id + "\x1f129\x1f0\x1f64", []string{`"truncated":true,"size":129`}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := Call("evidence.register", req(tt.outcome, tt.resp, tt.extra), []byte("T"))
			if err != nil {
				t.Fatal(err)
			}
			header, item, _ := strings.Cut(string(out), "\n")
			if header != tt.header {
				t.Errorf("header = %q, want %q", header, tt.header)
			}
			for _, s := range tt.contains {
				if !strings.Contains(item, s) {
					t.Errorf("item %s\nlacks %s", item, s)
				}
			}
		})
	}
	t.Run("entities", func(t *testing.T) {
		t.Parallel()
		out, err := Call("evidence.entities", req("SUCCESS", `{"code":0,"rows":[{"id":"a","name":"A"},{"id":"b"}]}`, ""), nil)
		if want := `{"type":"site","id":"a","name":"A"}` + "\n" + `{"type":"site","id":"b"}`; err != nil || string(out) != want {
			t.Fatalf("got %s, %v", out, err)
		}
	})
	t.Run("truncate", func(t *testing.T) {
		t.Parallel()
		out, err := Call("evidence.truncate", req("SUCCESS", `"`+strings.Repeat("y", 80)+`"`, `,"config":{"maxPayloadBytes":64},"locale":"en"`), nil)
		if err != nil {
			t.Fatal(err)
		}
		n, rest, _ := strings.Cut(string(out), "\n")
		want := "完成; the response has 82 bytes, over the 64-byte limit, so only the first 64 bytes are shown (truncated: true); the whole response is evidence " + id + ", read the rest page by page with builtin_evidence_get"
		if n != "219" || !strings.HasPrefix(rest, want+`{"truncated":true,"size":82,"limit":64,"evidenceId":"`+id+`","head":"\"yyy`) {
			t.Fatalf("got %s", out)
		}
	})
	t.Run("not executed", func(t *testing.T) {
		t.Parallel()
		if _, err := Call("evidence.register", req("REJECTED", `null`, ""), nil); err == nil {
			t.Fatal("evidence of a rejected call")
		}
	})
}
