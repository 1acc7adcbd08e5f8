//go:build wasip1

// Command splicebomb hands the splice primitive what it must not take, the
// mode named by its arguments' "mode": a payload copying a large value of
// the request more times than the output limit allows (amplify), a value
// inside a literal string (instring), a key twice (dupkey), a path of
// 1 MiB (longpath), parts that are not well formed (malformed: an unknown
// tag; cut: a length past the end), more parts than a splice takes
// (parts), and values a modifier makes anew, each a copy of the whole
// request, many times (modifiers: the host must charge them as read, not
// only once the payloads are assembled).
package main

import (
	"encoding/binary"
	"strings"
	"unsafe"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
)

//go:wasmimport warden splice
func hostSplice(kind unsafe.Pointer, kindLen uint32, parts unsafe.Pointer, partsLen uint32)

func splice(kind string, parts []byte) {
	hostSplice(unsafe.Pointer(unsafe.StringData(kind)), uint32(len(kind)), unsafe.Pointer(unsafe.SliceData(parts)), uint32(len(parts)))
}

func init() {
	guest.Serve(guest.Plugin{
		Manifest: abi.Manifest{Name: "splicebomb", Version: "1.0.0", Role: abi.RoleGuard, Phases: []abi.Phase{abi.PhaseBefore},
			Capabilities: []abi.Capability{abi.CapEffectEvidence}},
		Handle: func(c *guest.Call) {
			var p guest.Parts
			switch c.Get("args.mode").String() {
			case "amplify":
				p.JSON("[")
				for i := range 1000 {
					if i > 0 {
						p.JSON(",")
					}
					p.Value("args.big")
				}
				p.JSON("]")
			case "instring":
				p.JSON(`{"a":"x`)
				p.Value("args.big")
				p.JSON(`"}`)
			case "dupkey":
				p.JSON(`{"a":`)
				p.Value("args.mode")
				p.JSON(`,"a":1}`)
			case "longpath":
				p.Value(strings.Repeat("a", 1<<20))
			case "malformed":
				splice(abi.EffectEntityRecord, []byte{'j', 2, 0, 0, 0, '{', '}', 'X'})
				c.Pass(nil)
				return
			case "cut":
				splice(abi.EffectEntityRecord, binary.LittleEndian.AppendUint32([]byte{'v'}, 1<<30))
				c.Pass(nil)
				return
			case "modifiers":
				p.JSON("[")
				for i := range 30000 {
					if i > 0 {
						p.JSON(",")
					}
					p.Value("@reverse")
				}
				p.JSON("]")
			case "parts":
				for range 1<<16 + 1 {
					p.End()
				}
			}
			c.Splice(abi.EffectEntityRecord, &p)
			c.Pass(nil)
		},
	})
}

func main() {}
