package host_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// The guests of these tests are assembled byte by byte, as in
// host/internal/meter: each is a guard whose warden_handle (param i32) is
// the code under test.

func wu32(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func ws32(v int32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func wsec(id byte, parts ...[]byte) []byte {
	b := bytes.Join(parts, nil)
	return bytes.Join([][]byte{{id}, wu32(uint32(len(b))), b}, nil)
}

func wvec(items ...[]byte) []byte {
	return bytes.Join(append([][]byte{wu32(uint32(len(items)))}, items...), nil)
}

func wname(s string) []byte { return append(wu32(uint32(len(s))), s...) }

func wbody(code []byte) []byte {
	b := append([]byte{0x00}, code...)
	return append(wu32(uint32(len(b))), b...)
}

// meterGuard is a guard named name with pages of memory whose handler runs
// handle (a function body's code, without locals, ending in 0x0b).
func meterGuard(name string, pages uint32, handle []byte) []byte {
	manifest := fmt.Sprintf(`{"name":%q,"version":"1.0.0","abi":1,"role":"guard","phases":["before"]}`, name)
	manifestAt := int64(16)<<32 | int64(len(manifest))
	export := func(n string, kind byte, idx uint32) []byte { return append(append(wname(n), kind), wu32(idx)...) }
	return bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		wsec(1, wvec(
			[]byte{0x60, 0x00, 0x01, 0x7f},       // () -> i32
			[]byte{0x60, 0x00, 0x01, 0x7e},       // () -> i64
			[]byte{0x60, 0x01, 0x7f, 0x01, 0x7f}, // (i32) -> i32
			[]byte{0x60, 0x01, 0x7f, 0x00},       // (i32) -> ()
		)),
		wsec(3, wvec(wu32(0), wu32(1), wu32(2), wu32(3))),
		wsec(5, wvec(append([]byte{0x00}, wu32(pages)...))),
		wsec(7, wvec(export("memory", 2, 0), export("warden_abi_version", 0, 0), export("warden_manifest", 0, 1),
			export("warden_input", 0, 2), export("warden_handle", 0, 3))),
		wsec(10, wvec(
			wbody([]byte{0x41, 0x01, 0x0b}),
			wbody(append(append([]byte{0x42}, appendS64(manifestAt)...), 0x0b)),
			wbody([]byte{0x41, 0x80, 0x20, 0x0b}), // 4096
			wbody(handle),
		)),
		wsec(11, wvec(bytes.Join([][]byte{{0x00, 0x41, 0x10, 0x0b}, wname(manifest)}, nil))),
	}, nil)
}

func appendS64(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// storesAfterBlock is the review's first probe of a loop body that paid
// only for its code up to the first control instruction: loop { block {
// 20000 × i32.store } br 0 }.
func storesAfterBlock() []byte {
	code := []byte{0x03, 0x40, 0x02, 0x40}
	for range 20000 {
		code = append(code, 0x41, 0x00, 0x41, 0x00, 0x36, 0x02, 0x00)
	}
	return append(code, 0x0b, 0x0c, 0x00, 0x0b, 0x0b)
}

// fillAfterBlock is its second: loop { block { memory.fill 64 MiB } br 0 }.
func fillAfterBlock() []byte {
	code := []byte{0x03, 0x40, 0x02, 0x40, 0x41, 0x00, 0x41, 0x00, 0x41}
	code = append(code, ws32(64<<20)...)
	return append(code, 0xfc, 0x0b, 0x00, 0x0b, 0x0c, 0x00, 0x0b, 0x0b)
}

// TestMeterHostileLoops runs the review's probes of the metering through
// the host: each loop must end as PLUGIN_TIMEOUT soon after its deadline,
// and a guest that names the hidden loop counter must be refused at load.
func TestMeterHostileLoops(t *testing.T) {
	t.Parallel()
	h := newHostNoCache(t)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	const timeout = 200 * time.Millisecond
	pol := host.Policy{Limits: abi.Limits{TimeoutMs: int(timeout / time.Millisecond), MemoryPages: 2048}}
	tests := []struct {
		name   string
		handle []byte
		pages  uint32
	}{
		{"stores after a block", storesAfterBlock(), 1},
		{"memory.fill after a block", fillAfterBlock(), 1025},
		{"memory.copy in a loop", append(append([]byte{0x03, 0x40, 0x41, 0x00, 0x41, 0x80, 0x80, 0x80, 0x10, 0x41},
			ws32(64<<20)...), 0xfc, 0x0a, 0x00, 0x00, 0x0c, 0x00, 0x0b, 0x0b), 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p, err := h.Load(ctx, host.Source{Name: "probe", Bytes: meterGuard("probe", tt.pages, tt.handle)}, pol)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			start := time.Now()
			v := p.Guard(ctx, "t", before(`{}`))
			took := time.Since(start)
			if v.Observation == nil || v.Observation.Code != abi.PluginTimeout {
				t.Fatalf("verdict %+v, want PLUGIN_TIMEOUT", v)
			}
			if took > timeout+time.Second {
				t.Fatalf("returned after %v, deadline %v", took, timeout)
			}
		})
	}
}

// TestMeterRefusesHiddenLocal checks a guest cannot write the loop counter
// the meter adds after its locals: the review's probe, loop { i32.const 5;
// local.set 1; br 0 } in a function of one parameter, is refused at load.
func TestMeterRefusesHiddenLocal(t *testing.T) {
	t.Parallel()
	h := newHostNoCache(t)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	bin := meterGuard("probe", 1, []byte{0x03, 0x40, 0x41, 0x05, 0x21, 0x01, 0x0c, 0x00, 0x0b, 0x0b})
	_, err := h.Load(context.Background(), host.Source{Name: "probe", Bytes: bin}, fast)
	want := "host: compile probe: module does not compile: host: module cannot be instrumented: meter: code of function 3: local 1 of 1: malformed module"
	if !errors.Is(err, host.ErrCompile) || err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
}
