package host

import (
	"context"
	"fmt"
)

const extismEnvModule = "extism:host/env"

func (h *Host) loadExtism(ctx context.Context, name, digest string, bin []byte, pol Policy) (*Plugin, error) {
	return nil, fmt.Errorf("host: load %s: extism modules: %w", name, ErrNotAPlugin)
}
