package host

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
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
	// members indexes req's top-level members for the services' paths
	// (services.Members): given by the envelope's encoder when it has its
	// parts (GuardEnvelope), else built by one pass on first use.
	members services.Members
	// the services' one-entry cache: the key of the last answer (kind and
	// path bytes) and the answer; key is the one being looked up. The
	// buffers are the state's, reused from call to call.
	lastKey, key []byte
	lastOut      []byte
	lastFound    bool
	// path is the path being answered, copied out of guest memory; answer
	// holds query's answer (a copy: the cache outlives the guest's next
	// write to its memory).
	path, answer []byte
	// sum holds digest's answer.
	sum [sha256.Size]byte
	// the meter's last refill in the call (since meterEpoch) and its
	// quantum, 0 before the first (meterRefill)
	lastRefill  time.Duration
	lastQuantum uint64
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
