package guest

import (
	"encoding/json"

	"github.com/agentwarden/warden/abi"
)

func marshalManifest(m abi.Manifest) ([]byte, error) { return json.Marshal(m) }
