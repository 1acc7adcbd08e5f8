//go:build !wasip1

package guest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unsafe"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
	"github.com/tidwall/gjson"
)

// Native runs a Plugin in-process with the same result contract the host
// enforces on its wasm build (an abi.Recorder). Tests and benchmarks use it to
// put a guard beside its wasm build. A Native is not safe for concurrent use;
// make one per goroutine.
type Native struct {
	p        Plugin
	rec      *abi.Recorder
	clock    func() time.Time
	seed     uint64
	fakeTime int64
	req      []byte
	members  services.Members // req's top-level members, indexed once per call
	ctx      context.Context
	rand     io.Reader
	Logs     []string
}

// NativeOption configures a Native.
type NativeOption func(*Native)

// WithClock gives the plugin a clock, as the clock capability does.
func WithClock(now func() time.Time) NativeOption { return func(n *Native) { n.clock = now } }

// WithRand gives the plugin a source of randomness, as the random
// capability does (tests fix it).
func WithRand(r io.Reader) NativeOption { return func(n *Native) { n.rand = r } }

// NewNative prepares p to run in-process. maxOutput bounds reported bytes
// (0: unbounded), as the host's limit does.
func NewNative(p Plugin, maxOutput int, opts ...NativeOption) (*Native, error) {
	if p.Manifest.ABI == 0 {
		p.Manifest.ABI = abi.Version
	}
	if err := p.Manifest.Validate(); err != nil {
		return nil, fmt.Errorf("guest: native %s: %w", p.Manifest.Name, err)
	}
	n := &Native{p: p, fakeTime: fakeEpoch}
	n.rec = abi.NewRecorder(&n.p.Manifest, maxOutput)
	for _, o := range opts {
		o(n)
	}
	return n, nil
}

// fakeEpoch is the deterministic clock's start (2022-01-01T00:00:00Z), the
// same stand-in the wasm host gives a plugin without the clock capability.
const fakeEpoch = int64(1640995200) * int64(time.Second)

// Manifest returns the plugin's manifest.
func (n *Native) Manifest() abi.Manifest { return n.p.Manifest }

// Call runs one decision on the request envelope. A panic in the handler is
// returned as an error, as a trap is by the host.
func (n *Native) Call(ctx context.Context, req []byte) (v abi.Verdict, err error) {
	return n.CallIndexed(ctx, req, nil)
}

// CallIndexed is Call on an envelope whose encoder indexes its members
// (index fills m, as host.Envelope.MembersFor does), sparing the pass over
// req that Call makes to index them; nil index is Call.
func (n *Native) CallIndexed(ctx context.Context, req []byte, index func(m *services.Members)) (v abi.Verdict, err error) {
	if err := ctx.Err(); err != nil {
		return abi.Verdict{}, fmt.Errorf("guest: native %s: %w", n.p.Manifest.Name, err)
	}
	n.rec.Reset()
	defer func() {
		if r := recover(); r != nil {
			v, err = abi.Verdict{}, fmt.Errorf("guest: native %s: %w: %v", n.p.Manifest.Name, ErrPanic, r)
		}
	}()
	n.req, n.ctx = req, ctx
	if index != nil {
		index(&n.members)
	} else {
		n.members.Reset(req)
	}
	defer func() {
		n.req, n.ctx = nil, nil
		n.members.Reset(nil)
	}()
	c := Call{req: req, r: nativeReporter{n}, m: &n.p.Manifest}
	n.p.Handle(&c)
	return n.rec.Finish()
}

type nativeReporter struct{ n *Native }

func (r nativeReporter) success(message string, data []byte) {
	if r.n.rec.Charge(len(message) + len(data)) {
		r.n.rec.Success(message, data)
	}
}

func (r nativeReporter) result(o abi.Outcome, code, reason, next string, data []byte) {
	if r.n.rec.Charge(len(code) + len(reason) + len(next) + len(data)) {
		r.n.rec.Result(o, code, reason, next, data)
	}
}

func (r nativeReporter) pass(args, facts []byte) {
	if r.n.rec.Charge(len(args) + len(facts)) {
		r.n.rec.Pass(args, facts)
	}
}

func (r nativeReporter) effect(kind string, payload []byte) {
	if r.n.rec.Charge(len(kind) + len(payload)) {
		r.n.rec.Effect(kind, payload)
	}
}

func (r nativeReporter) now() int64 {
	if r.n.clock != nil && r.n.p.Manifest.Grants(abi.CapClock) {
		return r.n.clock().UnixNano()
	}
	r.n.fakeTime += int64(time.Millisecond)
	return r.n.fakeTime
}

func (r nativeReporter) random(p []byte) {
	if r.n.p.Manifest.Grants(abi.CapRandom) {
		src := r.n.rand
		if src == nil {
			src = rand.Reader
		}
		if _, err := io.ReadFull(src, p); err == nil {
			return
		}
	}
	for i := 0; i < len(p); i += sha256.Size {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], r.n.seed)
		r.n.seed++
		s := sha256.Sum256(b[:])
		copy(p[i:], s[:])
	}
}

// The native runner bounds a path as the host does (services.Query): a
// refused path voids the call as a contract violation in both builds. The
// path runs on the member its first key names (services.Members), and the
// answer aliases the request: what the guest keeps is copied (query).
func (r nativeReporter) get(path string) (gjson.Result, bool) {
	res, err := r.n.members.Query(path)
	if err != nil {
		r.n.rec.Violate(abi.ViolationHostRefused, err.Error())
		return gjson.Result{}, false
	}
	return res, true
}

func (r nativeReporter) query(path string) (string, bool) {
	res, ok := r.get(path)
	if !ok || !res.Exists() {
		return "", false
	}
	if r.n.members.Stable() {
		return res.Raw, true // in bytes that outlive the call
	}
	return strings.Clone(res.Raw), true
}

func (r nativeReporter) size(path string) int {
	res, ok := r.get(path)
	if !ok || !res.Exists() {
		return -1
	}
	return len(res.Raw)
}

func (r nativeReporter) exists(path string) bool {
	res, ok := r.get(path)
	return ok && res.Exists()
}

func (r nativeReporter) validate(schemaPath, docPath string) []byte {
	schema, ok1 := r.get(schemaPath)
	kept := r.n.members.Stable()
	doc, ok2 := r.get(docPath)
	if !ok1 || !ok2 {
		return nil
	}
	kept = kept && (r.n.members.Stable() || !doc.Exists())
	out, _ := services.ValidateIn(context.WithoutCancel(r.n.ctx), schema.Raw, doc, kept)
	return out
}

func (r nativeReporter) digest(path string, out *[DigestSize]byte) {
	v, ok := r.get(path)
	if !ok {
		return
	}
	*out = services.DigestIn(r.n.ctx, v, r.n.members.Stable())
}

func (r nativeReporter) hash(path string, out *[DigestSize]byte) bool {
	v, ok := r.get(path)
	if !ok || !v.Exists() {
		return false
	}
	*out = sha256.Sum256(unsafe.Slice(unsafe.StringData(v.Raw), len(v.Raw))) // only read
	return true
}

func (r nativeReporter) canonical(path string) []byte {
	v, ok := r.get(path)
	if !ok {
		return nil
	}
	// shared with the call's memo: an append copies, and the first-party
	// guards only read it
	return services.CanonicalIn(r.n.ctx, v, r.n.members.Stable())
}

func (r nativeReporter) walk(path string, limit int) string {
	v, ok := r.get(path)
	if !ok {
		return ""
	}
	out := services.WalkValue(v, limit) // fresh, and only read from here on
	return unsafe.String(unsafe.SliceData(out), len(out))
}

func (r nativeReporter) items(path string, limit int) string {
	v, ok := r.get(path) // refused as services.Items refuses
	if !ok {
		return ""
	}
	out := services.ItemsValue(v, limit) // fresh, and only read from here on
	return unsafe.String(unsafe.SliceData(out), len(out))
}

func (r nativeReporter) log(_ int32, msg string) {
	if len(r.n.Logs) < 100 {
		r.n.Logs = append(r.n.Logs, msg)
	}
}

// splice assembles the payloads as the host does (services.Splice), on the
// members the call's paths run on.
func (r nativeReporter) splice(kind string, parts []byte) {
	rec := r.n.rec
	room := rec.Room()
	if room >= 0 && len(kind)+len(parts) > room {
		rec.Charge(len(kind) + len(parts))
		return
	}
	stopped, grown := false, false
	err := services.Splice(parts, nativeSplice{r}, room, func(n int, p services.Spliced) {
		if stopped {
			return
		}
		if !grown {
			rec.GrowEffects(n)
			grown = true
		}
		if !rec.Charge(len(kind) + len(p.Payload)) {
			stopped = true
			return
		}
		rec.EffectSpliced(kind, p.Skeleton, p.Payload)
	})
	switch {
	case errors.Is(err, services.ErrSpliceTooLarge):
		rec.Charge(room + 1)
	case errors.Is(err, services.ErrSpliceJSON):
		rec.Violate(abi.ViolationBadData, kind+": "+err.Error())
	case err != nil:
		rec.Violate(abi.ViolationHostRefused, err.Error())
	}
}

// nativeSplice reads a splice's values as the native runner's paths do.
type nativeSplice struct{ r nativeReporter }

func (s nativeSplice) Query(path string) (gjson.Result, error) { return s.r.n.members.Query(path) }

func (s nativeSplice) Canonical(v gjson.Result) []byte {
	return services.CanonicalIn(s.r.n.ctx, v, s.r.n.members.Stable())
}
