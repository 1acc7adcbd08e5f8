package host

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"github.com/agentwarden/warden/internal/services"
	"time"

	"github.com/agentwarden/warden/abi"
)

// callState is what the host functions of one instance see during a call.
// It belongs to one instance, so it is never shared between goroutines.
type callState struct {
	plugin *Plugin
	rec    *abi.Recorder
	box    *sandbox
	logs   int
	// req is the request of the call in progress, for the host services.
	req []byte
	// members indexes req's members on the call's first path (query)
	members services.Members
	// the services' one-entry cache
	lastKey   string
	lastOut   []byte
	lastFound bool
	// hostBytes are the bytes host services read and answered during the
	// call, charged against the plugin's memory limit.
	hostBytes int64
}

type stateKey struct{}

func withState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, stateKey{}, st)
}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	return st
}

// fakeEpoch is where the deterministic wall clock starts:
// 2022-01-01T00:00:00Z, advancing 1 ms per reading.
const fakeEpoch = int64(1640995200) * int64(time.Second)

func (st *callState) now() int64 {
	sec, nsec := st.box.walltime()
	return sec*1e9 + int64(nsec)
}

func (st *callState) random(p []byte) { _, _ = st.box.Read(p) }

const maxLogLines = 64

func (st *callState) log(level int32, msg string) {
	if st.logs >= maxLogLines {
		return
	}
	st.logs++
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	st.plugin.host.log.Info("plugin log", "plugin", st.plugin.manifest.Name, "version", st.plugin.manifest.Version, "level", level, "msg", msg)
}

// deterministic fills p from a sha256 counter stream starting at *seed.
func deterministic(seed *uint64, p []byte) {
	for i := 0; i < len(p); i += sha256.Size {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], *seed)
		*seed++
		s := sha256.Sum256(b[:])
		copy(p[i:], s[:])
	}
}
