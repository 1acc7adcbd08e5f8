package meter_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agentwarden/warden/host/internal/meter"
)

// Modules are assembled byte by byte: the tests must not depend on a
// toolchain, and each one says exactly which encoding it exercises.

func u32(v uint32) []byte {
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

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func sec(id byte, body ...[]byte) []byte {
	b := cat(body...)
	return cat([]byte{id}, u32(uint32(len(b))), b)
}

// vec is a vector of items.
func vec(items ...[]byte) []byte { return cat(append([][]byte{u32(uint32(len(items)))}, items...)...) }

func name(s string) []byte { return cat(u32(uint32(len(s))), []byte(s)) }

func module(secs ...[]byte) []byte {
	return cat(append([][]byte{[]byte("\x00asm\x01\x00\x00\x00")}, secs...)...)
}

// functype params → results.
func functype(params, results []byte) []byte {
	return cat([]byte{0x60}, u32(uint32(len(params))), params, u32(uint32(len(results))), results)
}

// body is a function body with no locals.
func body(code ...byte) []byte {
	b := append([]byte{0x00}, code...)
	return cat(u32(uint32(len(b))), b)
}

func export(n string, kind byte, idx uint32) []byte { return cat(name(n), []byte{kind}, u32(idx)) }

var (
	voidType = functype(nil, nil)
	i32Type  = functype(nil, []byte{0x7f})
)

// oneFunc is a module with a memory, a table of 2 funcrefs, a mutable i32
// global and one exported function "f" of type t with code.
func oneFunc(t []byte, code ...byte) []byte {
	return module(
		sec(1, vec(t)),
		sec(3, vec(u32(0))),
		sec(4, vec([]byte{0x70, 0x00, 0x02})),
		sec(5, vec([]byte{0x00, 0x01})),
		sec(6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b})),
		sec(7, vec(export("f", 0, 0))),
		sec(9, vec([]byte{0x03, 0x00, 0x01, 0x00})), // declarative segment naming function 0
		sec(12, u32(1)),
		sec(10, vec(body(code...))),
		sec(11, vec([]byte{0x01, 0x02, 'h', 'i'})), // passive data
	)
}

func newRuntime(t *testing.T, refills *int) (context.Context, wazero.Runtime) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCoreFeatures(api.CoreFeaturesV2|experimental.CoreFeaturesThreads))
	t.Cleanup(func() { _ = rt.Close(ctx) })
	_, err := rt.NewHostModuleBuilder(meter.ImportModule).NewFunctionBuilder().
		WithFunc(func() int64 { *refills++; return 100 }).Export(meter.ImportName).
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, rt
}

// TestInstructionFamilies instruments one function per family of
// instructions, checks the original and the output compile, and that the
// output computes what the original does.
func TestInstructionFamilies(t *testing.T) {
	t.Parallel()
	v128 := func() []byte { return append([]byte{0xfd, 0x0c}, make([]byte, 16)...) }
	shared := module( // atomics need a shared memory
		sec(1, vec(i32Type)),
		sec(3, vec(u32(0))),
		sec(5, vec([]byte{0x03, 0x01, 0x01})),
		sec(7, vec(export("f", 0, 0))),
		sec(10, vec(body(
			0x41, 0x00, 0x41, 0x07, 0xfe, 0x17, 0x02, 0x00, // i32.atomic.store
			0x41, 0x00, 0x41, 0x01, 0xfe, 0x1e, 0x02, 0x00, // i32.atomic.rmw.add
			0xfe, 0x03, 0x00, // atomic.fence
			0x41, 0x00, 0x41, 0x00, 0xfe, 0x00, 0x02, 0x00, 0x1a, // memory.atomic.notify; drop
			0x0b))), // the rmw's old value, 7
	)
	tests := []struct {
		name string
		bin  []byte
		want uint64
	}{
		{"control and multi-value", module(
			sec(1, vec(i32Type, functype(nil, []byte{0x7f, 0x7f}))),
			sec(3, vec(u32(0))),
			sec(7, vec(export("f", 0, 0))),
			sec(10, vec(body(
				0x02, 0x01, 0x41, 0x02, 0x41, 0x03, 0x0b, // block (type 1) 2 3 end
				0x6a,                                           // i32.add
				0x04, 0x7f, 0x41, 0x01, 0x05, 0x41, 0x02, 0x0b, // if i32 1 else 2 end
				0x02, 0x40, 0x41, 0x00, 0x0e, 0x01, 0x00, 0x00, 0x0b, // block br_table 0 0 end
				0x01, 0x41, 0x05, 0x1a, // nop 5 drop
				0x41, 0x09, 0x41, 0x08, 0x41, 0x00, 0x1b, // select → 8
				0x6a, 0x0f, 0x0b))), // add, return
		), 9},
		{"loop counts to 1000", oneFunc(i32Type,
			0x03, 0x40, // loop
			0x23, 0x00, 0x41, 0x01, 0x6a, 0x24, 0x00, // g++
			0x23, 0x00, 0x41, 0xe8, 0x07, 0x49, 0x0d, 0x00, // br_if g < 1000
			0x0b, 0x23, 0x00, 0x0b), 1000},
		{"numeric, constants and sign extension", oneFunc(i32Type,
			0x42, 0x80, 0x01, 0xa7, // i64.const 128; i32.wrap
			0xc0,                         // i32.extend8_s → -128
			0x43, 0x00, 0x00, 0x80, 0x3f, // f32.const 1
			0x44, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // f64.const 1
			0xb6, 0x92, 0xa8, // f32.demote; f32.add; i32.trunc_f32_s → 2
			0x6a, 0x0b), 0xffffff82},
		{"memory", oneFunc(i32Type,
			0x41, 0x00, 0x41, 0x2a, 0x36, 0x02, 0x04, // i32.store offset 4
			0x41, 0x00, 0x28, 0x02, 0x04, // i32.load offset 4
			0x3f, 0x00, 0x6a, // memory.size
			0x41, 0x00, 0x40, 0x00, 0x6a, 0x0b), 44}, // memory.grow 0
		{"0xfc: saturating truncation, bulk memory, tables", oneFunc(i32Type,
			0x43, 0x00, 0x00, 0x80, 0x7f, 0xfc, 0x00, // f32 +inf; i32.trunc_sat_f32_s
			0x41, 0x00, 0x41, 0x00, 0x41, 0x02, 0xfc, 0x08, 0x00, 0x00, // memory.init 0
			0xfc, 0x09, 0x00, // data.drop 0
			0x41, 0x08, 0x41, 0x00, 0x41, 0x02, 0xfc, 0x0a, 0x00, 0x00, // memory.copy
			0x41, 0x10, 0x41, 0x01, 0x41, 0x04, 0xfc, 0x0b, 0x00, // memory.fill
			0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xfc, 0x0c, 0x00, 0x00, // table.init 0 0
			0xfc, 0x0d, 0x00, // elem.drop 0
			0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xfc, 0x0e, 0x00, 0x00, // table.copy
			0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x1a, // table.grow
			0x41, 0x00, 0xd0, 0x70, 0x41, 0x01, 0xfc, 0x11, 0x00, // table.fill
			0xfc, 0x10, 0x00, 0x6a, // table.size (3)
			0x41, 0x09, 0x2d, 0x00, 0x00, 0x6a, // i32.load8_u 9 ('i')
			0x0b), 0x7fffffff + 3 + 'i'},
		{"reference types", oneFunc(i32Type,
			0x41, 0x00, 0xd2, 0x00, 0x26, 0x00, // table.set 0 (ref.func 0)
			0x41, 0x00, 0x25, 0x00, 0xd1, // table.get 0; ref.is_null → 0
			0xd0, 0x6f, 0xd1, 0x6a, // ref.null extern; ref.is_null → 1
			0x41, 0x05, 0x41, 0x06, 0x41, 0x01, 0x1c, 0x01, 0x7f, 0x6a, // typed select → 5
			0x0b), 6},
		{"SIMD", oneFunc(i32Type, cat(
			[]byte{0x41, 0x00}, v128(), []byte{0xfd, 0x0b, 0x04, 0x00}, // v128.store
			[]byte{0x41, 0x00, 0x41, 0x00, 0xfd, 0x00, 0x04, 0x00}, // v128.load
			[]byte{0xfd, 0x54, 0x00, 0x00, 0x03},                   // v128.load8_lane 3
			[]byte{0x41, 0x00, 0xfd, 0x5c, 0x02, 0x00, 0xfd, 0x6e}, // v128.load32_zero; i8x16.add
			[]byte{0x41, 0x00, 0xfd, 0x00, 0x04, 0x00},             // v128.load
			[]byte{0xfd, 0x0d}, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, // shuffle
			[]byte{0x41, 0x03, 0xfd, 0x0f, 0xfd, 0x6e}, // i8x16.splat 3; add
			[]byte{0xfd, 0x15, 0x00},                   // i8x16.extract_lane_s 0
			[]byte{0x0b})...), 3},
		{"atomics", shared, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refills := 0
			ctx, rt := newRuntime(t, &refills)
			want := run(t, ctx, rt, tt.bin)
			if want != tt.want {
				t.Fatalf("original returns %d, want %d", want, tt.want)
			}
			out, err := meter.Instrument(tt.bin)
			if err != nil {
				t.Fatal(err)
			}
			if got := run(t, ctx, rt, out); got != want {
				t.Fatalf("instrumented returns %d, want %d", got, want)
			}
			if refills == 0 {
				t.Fatal("the instrumented function never asked for fuel")
			}
		})
	}
}

var instances int

func run(t *testing.T, ctx context.Context, rt wazero.Runtime, bin []byte) uint64 {
	t.Helper()
	cm, err := rt.CompileModule(ctx, bin)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	defer mod.Close(ctx)
	r, err := mod.ExportedFunction("f").Call(ctx)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if len(r) == 0 {
		return 0
	}
	return r[0]
}

// TestLoopRefills checks the fuel is charged per loop iteration: the
// loop's body costs 9 (its instructions, with the end), so its function's
// counter holds 32 passes, 288; the first pass finds it empty (it starts at
// 0, less the 3 charged before the loop for the code after it), and then
// every 33rd. Each of those checks charges more than the test's quantum of
// 100 and asks for fuel: 31 times in 1000 iterations, and once at the
// function's entry.
func TestLoopRefills(t *testing.T) {
	t.Parallel()
	refills := 0
	ctx, rt := newRuntime(t, &refills)
	out, err := meter.Instrument(oneFunc(i32Type,
		0x03, 0x40, 0x23, 0x00, 0x41, 0x01, 0x6a, 0x24, 0x00,
		0x23, 0x00, 0x41, 0xe8, 0x07, 0x49, 0x0d, 0x00, 0x0b, 0x23, 0x00, 0x0b))
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, rt, out)
	if want := 1 + 1 + 999/33; refills != want {
		t.Fatalf("%d refills, want %d", refills, want)
	}
}

// TestIndexFixups checks everything that names a function still names the
// same function once the import is added.
func TestIndexFixups(t *testing.T) {
	t.Parallel()
	// import env.seven () -> i32 (function 0); defined: 1 "f" calls
	// through the table entry 1 (ref.func 2 via an expression segment)
	// plus a direct call of 2; 2 returns 35 plus env.seven; 3 is the start
	// function, which sets the global from a funcref global's nullness.
	bin := module(
		sec(1, vec(i32Type, voidType)),
		sec(2, vec(cat(name("env"), name("seven"), []byte{0x00, 0x00}))),
		sec(3, vec(u32(0), u32(0), u32(1))),
		sec(4, vec([]byte{0x70, 0x00, 0x02})),
		sec(6, vec(
			[]byte{0x7f, 0x01, 0x41, 0x00, 0x0b}, // global 0: i32 mut
			[]byte{0x70, 0x00, 0xd2, 0x02, 0x0b}, // global 1: funcref = ref.func 2
		)),
		sec(7, vec(export("f", 0, 1), export("g", 0, 2), export("t", 1, 0))),
		sec(8, u32(3)),
		sec(9, vec(
			[]byte{0x00, 0x41, 0x00, 0x0b, 0x01, 0x02},             // active, func indices: table[0] = 2
			[]byte{0x04, 0x41, 0x01, 0x0b, 0x01, 0xd2, 0x02, 0x0b}, // active, expressions: table[1] = ref.func 2
		)),
		sec(10, vec(
			body(0x41, 0x01, 0x11, 0x00, 0x00, 0x10, 0x02, 0x6a, 0x23, 0x00, 0x6a, 0x0b), // f
			body(0x41, 0x23, 0x10, 0x00, 0x6a, 0x0b),                                     // g: 35 + seven
			body(0x23, 0x01, 0xd1, 0x45, 0x24, 0x00, 0x0b),                               // start: global 0 = !is_null
		)),
		sec(0, name("name"), []byte{0x01}, func() []byte {
			b := vec(cat(u32(0), name("seven")), cat(u32(1), name("f")), cat(u32(2), name("g")), cat(u32(3), name("start")))
			return cat(u32(uint32(len(b))), b)
		}()),
		sec(0, name(".debug_info"), []byte{1, 2, 3}),
	)
	refills := 0
	ctx, rt := newRuntime(t, &refills)
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func() int32 { return 7 }).Export("seven").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := meter.Instrument(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{bin, out} {
		if got := run(t, ctx, rt, b); got != 2*42+1 {
			t.Fatalf("f returns %d, want 85", got)
		}
	}
	cm, err := rt.CompileModule(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for n, f := range cm.ExportedFunctions() {
		names[n] = f.Name()
	}
	if names["f"] != "f" || names["g"] != "g" {
		t.Fatalf("names of the exports: %v", names)
	}
	imports := cm.ImportedFunctions()
	if len(imports) != 2 {
		t.Fatalf("%d imports, want 2", len(imports))
	}
	if mod, n, _ := imports[1].Import(); mod != meter.ImportModule || n != meter.ImportName {
		t.Fatalf("import 1 is %s.%s", mod, n)
	}
	if bytes.Contains(out, []byte(".debug_info")) {
		t.Fatal("DWARF kept")
	}
}

// TestRefusals checks each kind of input the rewriter refuses.
func TestRefusals(t *testing.T) {
	t.Parallel()
	head := []byte("\x00asm\x01\x00\x00\x00")
	tests := []struct {
		name string
		bin  []byte
		is   error
		err  string
	}{
		{"not wasm", []byte("\x00asm\x02\x00\x00\x00"), meter.ErrMalformed, "meter: not a wasm 1 module: malformed module"},
		{"truncated", append(head, 0x01, 0x05, 0x01), meter.ErrMalformed, "meter: section headers: truncated or bad encoding at byte 10: malformed module"},
		{"unknown section", append(head, 0x0e, 0x00), meter.ErrMalformed, "meter: unknown section 14: malformed module"},
		{"section twice", append(head, 0x01, 0x01, 0x00, 0x01, 0x01, 0x00), meter.ErrMalformed, "meter: section 1 twice: malformed module"},
		{"GC type", module(sec(1, vec([]byte{0x5f, 0x00}))), meter.ErrUnsupported, "meter: type 0: form 0x5f (GC): unsupported wasm feature"},
		{"typed reference", module(sec(1, vec(functype([]byte{0x64, 0x70}, nil)))), meter.ErrUnsupported, "meter: type 0: typed reference 0x64: unsupported wasm feature"},
		{"tag section", module(sec(13, vec())), meter.ErrUnsupported, "meter: tag section (exception handling): unsupported wasm feature"},
		{"reserved import", module(sec(1, vec(voidType)), sec(2, vec(cat(name(meter.ImportModule), name("x"), []byte{0, 0})))),
			meter.ErrReserved, `meter: import 0 from "warden_meter": module imports the meter's reserved module`},
		{"bodies without functions", module(sec(10, vec(body(0x0b)))), meter.ErrMalformed, "meter: 1 bodies for 0 functions: malformed module"},
		{"try", oneFunc(voidType, 0x06, 0x40, 0x0b, 0x0b), meter.ErrUnsupported, "meter: code of function 0: opcode 0x06 (exception handling): unsupported wasm feature"},
		{"try_table", oneFunc(voidType, 0x1f, 0x40, 0x00, 0x0b, 0x0b), meter.ErrUnsupported, "meter: code of function 0: opcode 0x1f (exception handling): unsupported wasm feature"},
		{"return_call", oneFunc(voidType, 0x12, 0x00, 0x0b), meter.ErrUnsupported, "meter: code of function 0: opcode 0x12 (tail call): unsupported wasm feature"},
		{"call_ref", oneFunc(voidType, 0x14, 0x00, 0x0b), meter.ErrUnsupported, "meter: code of function 0: opcode 0x14 (typed references or GC): unsupported wasm feature"},
		{"GC prefix", oneFunc(voidType, 0xfb, 0x00, 0x0b), meter.ErrUnsupported, "meter: code of function 0: opcode 0xfb (typed references or GC): unsupported wasm feature"},
		{"relaxed SIMD", oneFunc(voidType, 0xfd, 0x80, 0x02, 0x0b), meter.ErrUnsupported, "meter: code of function 0: opcode 0xfd 256 (relaxed SIMD): unsupported wasm feature"},
		{"multiple memories", oneFunc(voidType, 0x41, 0x00, 0x28, 0x42, 0x01, 0x00, 0x1a, 0x0b), meter.ErrUnsupported,
			"meter: code of function 0: memarg with a memory index (multiple memories): unsupported wasm feature"},
		{"unknown opcode", oneFunc(voidType, 0x27, 0x0b), meter.ErrMalformed, "meter: code of function 0: opcode 0x27: malformed module"},
		{"global past the module's", oneFunc(voidType, 0x23, 0x01, 0x1a, 0x0b), meter.ErrMalformed, "meter: code of function 0: global 1 of 1: malformed module"},
		{"call past the module's", oneFunc(voidType, 0x10, 0x01, 0x0b), meter.ErrMalformed, "meter: code of function 0: function 1 of 1: malformed module"},
		{"block type past the module's", oneFunc(voidType, 0x02, 0x01, 0x0b, 0x0b), meter.ErrMalformed, "meter: code of function 0: block type 1 of 1: malformed module"},
		{"code after the end", oneFunc(voidType, 0x0b, 0x01), meter.ErrMalformed, "meter: code of function 0: 1 bytes after the body's end: malformed module"},
		{"unterminated body", oneFunc(voidType, 0x01), meter.ErrMalformed, "meter: code of function 0: truncated or bad encoding at byte 2: malformed module"},
		{"overlong LEB", oneFunc(voidType, 0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x1a, 0x0b), meter.ErrMalformed,
			"meter: code of function 0: truncated or bad encoding at byte 7: malformed module"},
		{"local past the function's", oneFunc(voidType, 0x03, 0x40, 0x41, 0x05, 0x21, 0x00, 0x0c, 0x00, 0x0b, 0x0b), meter.ErrMalformed,
			"meter: code of function 0: local 0 of 0: malformed module"},
		{"local past the parameters and locals", module(
			sec(1, vec(functype([]byte{0x7f}, nil))),
			sec(3, vec(u32(0))),
			sec(10, vec(cat(u32(6), []byte{0x01, 0x01, 0x7e, 0x20, 0x02, 0x0b}))), // one i64 local; local.get 2
		), meter.ErrMalformed, "meter: code of function 0: local 2 of 2: malformed module"},
		{"local.tee past the function's", oneFunc(i32Type, 0x41, 0x00, 0x22, 0x00, 0x0b), meter.ErrMalformed,
			"meter: code of function 0: local 0 of 0: malformed module"},
		{"local.get in a constant expression", module(sec(6, vec([]byte{0x7f, 0x00, 0x20, 0x00, 0x0b}))), meter.ErrMalformed,
			"meter: global 0: local 0 of 0: malformed module"},
		{"bytes after the code", module(sec(1, vec(voidType)), sec(3, vec(u32(0))), sec(10, vec(body(0x0b)), []byte{0x00})),
			meter.ErrMalformed, "meter: section 10: 1 bytes after its entries: malformed module"},
		{"bytes after the exports", module(sec(7, vec(), []byte{0x00, 0x00})), meter.ErrMalformed,
			"meter: section 7: 2 bytes after its entries: malformed module"},
		{"bytes after the globals", module(sec(6, vec([]byte{0x7f, 0x00, 0x41, 0x00, 0x0b}), []byte{0x01})), meter.ErrMalformed,
			"meter: section 6: 1 bytes after its entries: malformed module"},
		{"bytes after the elements", module(sec(9, vec(), []byte{0x01})), meter.ErrMalformed,
			"meter: section 9: 1 bytes after its entries: malformed module"},
		{"bytes after the start", module(sec(1, vec(voidType)), sec(3, vec(u32(0))), sec(8, u32(0), []byte{0x00}), sec(10, vec(body(0x0b)))),
			meter.ErrMalformed, "meter: section 8: 1 bytes after its entries: malformed module"},
		{"export of the fuel's index", module(sec(7, vec(export("x", 3, 0)))), meter.ErrMalformed, "meter: export 0 names global 0 of 0: malformed module"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := meter.Instrument(tt.bin)
			if !errors.Is(err, tt.is) || err.Error() != tt.err {
				t.Fatalf("error %v\nwant %s", err, tt.err)
			}
		})
	}
}

// TestEmptyModule checks the sections the rewriter adds to a module that
// has none.
func TestEmptyModule(t *testing.T) {
	t.Parallel()
	refills := 0
	ctx, rt := newRuntime(t, &refills)
	out, err := meter.Instrument(module())
	if err != nil {
		t.Fatal(err)
	}
	cm, err := rt.CompileModule(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cm.ImportedFunctions()); n != 1 {
		t.Fatalf("%d imports, want 1", n)
	}
}

// passesOf is loop { block { work } end; g--; br_if g } with the global g
// set to passes first: the loop runs work passes times.
func passesOf(passes int32, work ...byte) []byte {
	code := append([]byte{0x41}, s32(passes)...)
	code = append(code, 0x24, 0x00, 0x03, 0x40, 0x02, 0x40)
	code = append(code, work...)
	return append(code, 0x0b,
		0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, // g--
		0x23, 0x00, 0x0d, 0x00, // br_if 0 (g != 0)
		0x0b, 0x0b)
}

func s32(v int32) []byte {
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

// TestChargeBoundsWork checks that what a loop does after its first
// control instruction, and the length of a bulk op, are charged: with
// refill handing out a quantum q, a run that does work units of it (an
// instruction, or a byte of a bulk op) asks for fuel at least work/(q+c)
// times, where c bounds the largest single charge. A review found these
// loops ran for free: the first paid only for the code up to its block,
// the second 1 per memory.fill.
func TestChargeBoundsWork(t *testing.T) {
	t.Parallel()
	const q = 1 << 16
	var stores []byte
	for range 1000 {
		stores = append(stores, 0x41, 0x00, 0x41, 0x00, 0x36, 0x02, 0x00)
	}
	fill := append([]byte{0x41, 0x00, 0x41, 0x00, 0x41}, s32(1<<16)...)
	tests := []struct {
		name       string
		bin        []byte
		work, most int
	}{
		{"stores after a block", oneFunc(voidType, passesOf(2000, stores...)...), 2000 * 3 * 1000, 1<<14 + 3020},
		{"memory.fill after a block", oneFunc(voidType, passesOf(1000, append(fill, 0xfc, 0x0b, 0x00)...)...), 1000 << 16, 1<<16 + 1<<14},
		{"memory.copy after a block", oneFunc(voidType, passesOf(1000, append(fill, 0xfc, 0x0a, 0x00, 0x00)...)...), 1000 << 16, 1<<16 + 1<<14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig())
			t.Cleanup(func() { _ = rt.Close(ctx) })
			refills := 0
			_, err := rt.NewHostModuleBuilder(meter.ImportModule).NewFunctionBuilder().
				WithFunc(func() int64 { refills++; return q }).Export(meter.ImportName).
				Instantiate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out, err := meter.Instrument(tt.bin)
			if err != nil {
				t.Fatal(err)
			}
			run(t, ctx, rt, out)
			if want := tt.work / (q + tt.most); refills < want {
				t.Fatalf("%d refills, want at least %d", refills, want)
			}
		})
	}
}
