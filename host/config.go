package host

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/jsonschema"
)

// validateConfig checks a plugin's config against its manifest's
// configSchema. An absent config is checked as {}, so a schema's required
// keys are enforced.
func validateConfig(schema, config json.RawMessage) error {
	if len(schema) == 0 {
		return nil
	}
	s, err := jsonschema.Shared.Get(string(schema))
	if err != nil {
		return fmt.Errorf("configSchema: %w: %w", ErrManifest, err)
	}
	doc := string(config)
	if len(config) == 0 {
		doc = "{}"
	}
	errs := s.ValidateString(doc)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("config: %s: %w", strings.Join(msgs, "; "), ErrConfig)
}
