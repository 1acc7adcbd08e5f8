package host

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/tetratelabs/wazero/api"
)

// One module serving several plugins (abi/guest.ServeAll) is bound to one
// of them by a custom section, abi.SelectSection, after its last section:
// SelectPlugin appends it. The host compiles the module without the
// section, so every plugin of the module shares one compilation (cached by
// the module's digest), and starts each instance selecting the plugin
// (abi.ExportSelect) before it reads the manifest. The bound module's
// digest, which a slot's generations record, names module and plugin
// both; the module's own is ModuleDigest.

// maxSelectName bounds the plugin name of a SelectSection: a manifest
// name (abi.Manifest) is at most 64 bytes.
const maxSelectName = 64

// SelectPlugin returns module bound to the plugin of that name (its
// manifest's name): module with a SelectSection naming it appended. A
// module bound already is bound again to plugin instead.
func SelectPlugin(module []byte, plugin string) []byte {
	if m, _, ok := splitSelection(module); ok {
		module = m
	}
	payload := appendULEB(nil, uint32(len(abi.SelectSection)))
	payload = append(payload, abi.SelectSection...)
	payload = append(payload, plugin...)
	out := make([]byte, 0, len(module)+len(payload)+6)
	out = append(out, module...)
	out = append(out, 0) // a custom section
	out = appendULEB(out, uint32(len(payload)))
	return append(out, payload...)
}

// ModuleDigest is the hex sha256 of the module itself, without the
// SelectSection a module bound to one plugin carries: the same for every
// plugin bound from one module.
func ModuleDigest(b []byte) string {
	if m, _, ok := splitSelection(b); ok {
		return Digest(m)
	}
	return Digest(b)
}

// splitSelection returns the module without its final SelectSection and
// the plugin it names, and whether it has one. A module that is not a
// well-formed sequence of sections has none here; the rewriters and the
// compiler refuse it later.
func splitSelection(b []byte) (module []byte, plugin string, ok bool) {
	if len(b) < 8 || !bytes.Equal(b[:4], []byte("\x00asm")) {
		return b, "", false
	}
	at := 8
	for at < len(b) {
		start := at
		id := b[at]
		size, n := readULEB(b[at+1:])
		if n == 0 || uint64(at+1+n)+uint64(size) > uint64(len(b)) {
			return b, "", false
		}
		body := b[at+1+n : at+1+n+int(size)]
		at += 1 + n + int(size)
		if id != 0 || at != len(b) {
			continue
		}
		nameLen, m := readULEB(body)
		if m == 0 || uint64(m)+uint64(nameLen) > uint64(len(body)) || string(body[m:m+int(nameLen)]) != abi.SelectSection {
			return b, "", false
		}
		return b[:start], string(body[m+int(nameLen):]), true
	}
	return b, "", false
}

// checkSelectName refuses a SelectSection's name no manifest could carry.
func checkSelectName(name string) error {
	if name == "" || len(name) > maxSelectName {
		return fmt.Errorf("section %s names a plugin of %d bytes, want 1 to %d: %w", abi.SelectSection, len(name), maxSelectName, ErrSelect)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("section %s names plugin %q, not printable ASCII: %w", abi.SelectSection, name, ErrSelect)
		}
	}
	return nil
}

func appendULEB(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// readULEB reads an unsigned LEB128 of at most 32 bits; n is 0 when b does
// not start with one.
func readULEB(b []byte) (v uint32, n int) {
	for i := 0; i < len(b) && i < 5; i++ {
		v |= uint32(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if i == 4 && b[i] > 0x0f {
				return 0, 0
			}
			return v, i + 1
		}
	}
	return 0, 0
}

// maxSelectReason bounds what the host reads of a guest's refusal.
const maxSelectReason = 1024

// selectPlugin asks a new instance to serve plugin (abi.ExportSelect):
// the name goes through the input buffer, as a request does.
func selectPlugin(ctx context.Context, mod api.Module, plugin string) error {
	sel := mod.ExportedFunction(abi.ExportSelect)
	if sel == nil {
		return fmt.Errorf("it serves one plugin (it exports no %s), and section %s names %q: %w", abi.ExportSelect, abi.SelectSection, plugin, ErrSelect)
	}
	input := mod.ExportedFunction(exportInput)
	r, err := input.Call(ctx, uint64(len(plugin)))
	if err != nil {
		return err
	}
	if !mod.Memory().Write(uint32(r[0]), []byte(plugin)) {
		return fmt.Errorf("input buffer %d+%d out of bounds", uint32(r[0]), len(plugin))
	}
	if r, err = sel.Call(ctx, uint64(len(plugin))); err != nil {
		return err
	}
	if r[0] == 0 {
		return nil
	}
	ptr, n := uint32(r[0]>>32), min(uint32(r[0]), maxSelectReason)
	reason, ok := mod.Memory().Read(ptr, n)
	if !ok {
		return fmt.Errorf("plugin %q not selected: %w", plugin, ErrSelect)
	}
	return fmt.Errorf("plugin %q not selected: %s: %w", plugin, printable(reason), ErrSelect)
}

// unboundReason says what a module serving several plugins and bound to
// none serves, from its refusal of no name; "" when it is not such a
// module.
func unboundReason(ctx context.Context, impl instanceImpl) string {
	d, ok := impl.(*directInstance)
	if !ok || d.mod.ExportedFunction(abi.ExportSelect) == nil {
		return ""
	}
	err := selectPlugin(ctx, d.mod, "")
	if err == nil {
		return ""
	}
	_, reason, ok := strings.Cut(err.Error(), "not selected: ")
	if !ok {
		return ""
	}
	reason, _, _ = strings.Cut(reason, ": "+ErrSelect.Error())
	return reason
}

// printable keeps a guest's text to printable ASCII.
func printable(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out = append(out, c)
	}
	return string(out)
}

// selectError is a selection refused by the host or the guest, which Load
// reports as it is.
type selectError struct{ err error }

func (e selectError) Error() string { return e.err.Error() }
func (e selectError) Unwrap() error { return e.err }
