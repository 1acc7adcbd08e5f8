package rules

import (
	"bytes"
	"sync"

	"github.com/agentwarden/warden/contract"
)

// A node calls its builtins many times with the same skill contract, so a
// parsed contract is kept per skill key and text: the parsed contract
// carries its skill key, so two skills with the same text each get their
// own (errors are not kept). The cache lives in the
// plugin instance (each wasm instance has its own); it is small and bounded
// because an instance serves one tenant's few skills at a time.
var contracts = struct {
	sync.Mutex
	m map[string]*contract.Contract // key: skill key, NUL, the contract's text
}{m: map[string]*contract.Contract{}}

// MaxContracts bounds the parsed contracts one plugin instance keeps; the
// cache is emptied when it would grow beyond.
const MaxContracts = 16

// Parse returns the parsed skill contract of raw for skillKey, from the
// cache when the same text was parsed before. An empty
// or null contract is the empty contract.
func Parse(skillKey string, raw []byte) (*contract.Contract, error) {
	src := bytes.TrimSpace(raw)
	if len(src) == 0 || string(src) == "null" {
		src = []byte("{}")
	}
	key := skillKey + "\x00" + string(src)
	contracts.Lock()
	ct, ok := contracts.m[key]
	contracts.Unlock()
	if ok {
		return ct, nil
	}
	ct, _, err := contract.Parse(skillKey, src)
	if err != nil {
		return nil, err
	}
	contracts.Lock()
	if len(contracts.m) >= MaxContracts {
		clear(contracts.m)
	}
	contracts.m[key] = ct
	contracts.Unlock()
	return ct, nil
}
