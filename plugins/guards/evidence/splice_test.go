package evidence_test

import (
	"testing"

	"github.com/agentwarden/warden/plugins/guards/evidence"
)

// TestSpliceBothBuilds: the spliced evidence of every request of the
// corpus is the same natively and as wasm (the host's splice and the
// native runner's), effects and observation alike.
func TestSpliceBothBuilds(t *testing.T) {
	t.Parallel()
	for _, req := range evidence.SpliceCorpus {
		if v := both(t, req); len(v.Effects) == 0 {
			t.Fatalf("no effects for %s", req)
		}
	}
}
