package services

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// walked decodes a Walk answer for comparison.
func walked(b []byte) string {
	if len(b) < 9 {
		return fmt.Sprintf("short %q", b)
	}
	kind := string(b[0])
	if b[0] == WalkMissing {
		kind = "missing"
	}
	n := int(binary.LittleEndian.Uint32(b[5:]))
	var leaves []string
	for i := 9; i < len(b); {
		l := int(binary.LittleEndian.Uint32(b[i:]))
		leaves = append(leaves, string(b[i+4:i+4+l]))
		i += 4 + l
	}
	if len(leaves) != n {
		return fmt.Sprintf("%d leaves counted, %d written", n, len(leaves))
	}
	return fmt.Sprintf("%s %d %q", kind, binary.LittleEndian.Uint32(b[1:]), leaves)
}

func TestWalk(t *testing.T) {
	t.Parallel()
	req := []byte(`{"response":{"data":{"records":[{"id":1,"t":"a\"b","n":null},{"id":"1","t":"c","tags":["x",true,false,1.50]},{"id":2,"t":"c"}],"total":3,"none":null,"empty":[],"o":{}}}}`)
	tests := []struct {
		path  string
		limit int
		want  string
	}{
		{"response.data.records", 100, `[ 3 ["1" "a\"b" "c" "x" "true" "false" "1.5" "2"]`},
		{"response.data.records", 3, `[ 3 ["1" "a\"b" "c"]`},
		{"response.data.records", 0, `[ 3 []`},
		{"response.data.records", -5, `[ 3 []`},
		{"response.data", 2, `{ 5 ["1" "a\"b"]`},
		{"response.data.total", 10, `# 0 ["3"]`},
		{"response.data.none", 10, `n 0 []`},
		{"response.data.empty", 10, `[ 0 []`},
		{"response.data.o", 10, `{ 0 []`},
		{"response.data.records.1.t", 10, `s 0 ["c"]`},
		{"response.data.records.1.tags.1", 10, `t 0 ["true"]`},
		{"response.absent", 10, `missing 0 []`},
	}
	for _, tt := range tests {
		out, err := Walk(req, tt.path, tt.limit)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if got := walked(out); got != tt.want {
			t.Errorf("Walk(%s, %d) = %s, want %s", tt.path, tt.limit, got, tt.want)
		}
	}
	if _, err := Walk(req, "response|@pretty", 10); !errors.Is(err, ErrPath) {
		t.Errorf("refused path: %v", err)
	}
}

// TestWalkBounds checks the leaf cap and the set that takes over from the
// linear search past walkLinear leaves.
func TestWalkBounds(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"a":[`)
	for i := range 3 * MaxWalkLeaves {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d,%d", i, i) // every value twice
	}
	b.WriteString(`]}`)
	out, err := Walk([]byte(b.String()), "a", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint32(out[5:]); n != MaxWalkLeaves {
		t.Fatalf("%d leaves, want the cap %d", n, MaxWalkLeaves)
	}
	if size := binary.LittleEndian.Uint32(out[1:]); size != 6*MaxWalkLeaves {
		t.Fatalf("size %d", size)
	}
	got := walked(out)
	if !strings.HasSuffix(got, fmt.Sprintf(`"%d"]`, MaxWalkLeaves-1)) {
		t.Fatalf("leaves are not the first distinct ones: ...%s", got[len(got)-40:])
	}
}

func FuzzWalk(f *testing.F) {
	f.Add([]byte(`{"a":[1,"1",{"b":[null,true]}]}`), "a", 5)
	f.Add([]byte(`[[[[[]]]]]`), "@this", 1)
	f.Fuzz(func(t *testing.T, req []byte, path string, limit int) {
		out, err := Walk(req, path, limit)
		if err != nil {
			return
		}
		if got := walked(out); strings.HasPrefix(got, "short") || strings.Contains(got, "counted") {
			t.Fatalf("malformed answer: %s", got)
		}
	})
}
