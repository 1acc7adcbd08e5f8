package host

import (
	"encoding/json"
	"slices"

	"github.com/agentwarden/warden/abi"
)

// ViewGranted says whether the request's state entry key may travel to a
// plugin granted grant: deny by default, only a state view (state.*) the
// grant names. Every way a plugin is called, wasm or in-process, whole
// request or spliced envelope, filters through here.
func ViewGranted(key string, grant []abi.Capability) bool {
	c := abi.Capability(key)
	return c.IsStateView() && slices.Contains(grant, c)
}

// FilterViews deletes from state every entry ViewGranted refuses.
func FilterViews(state map[string]json.RawMessage, grant []abi.Capability) {
	for k := range state {
		if !ViewGranted(k, grant) {
			delete(state, k)
		}
	}
}
