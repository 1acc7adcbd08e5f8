package openai

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/fakeprovider"
)

// reply is one raw scripted answer of the fake provider: a status, headers
// and a body sent as they are.
type reply struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration // before answering; cut short when the client gives up
}

// received is one request as the fake provider saw it.
type received struct {
	method, path string
	header       http.Header
	body         string
}

// fakeServer is the fake provider of internal/fakeprovider playing raw
// replies; the last reply repeats once the script runs out.
type fakeServer struct{ *fakeprovider.Server }

func newFakeServer(t *testing.T, replies ...reply) *fakeServer {
	t.Helper()
	rs := make([]fakeprovider.Reply, len(replies))
	for i, r := range replies {
		rs[i] = fakeprovider.Reply{Status: r.status, Header: r.header, Body: r.body, Delay: r.delay}
	}
	return &fakeServer{fakeprovider.New(t, rs...)}
}

func (f *fakeServer) requests() []received {
	var out []received
	for _, r := range f.Requests() {
		out = append(out, received{method: r.Method, path: r.Path, header: r.Header, body: r.Body})
	}
	return out
}

// testConfig is a fast configuration for a fake provider at url.
func testConfig(url string) Config {
	return Config{
		BaseURL:          url + "/v1",
		APIKey:           "sk-test-SECRET-0123456789",
		Model:            "gpt-test",
		AttemptTimeout:   2 * time.Second,
		CallTimeout:      5 * time.Second,
		MaxRetries:       2,
		InitialBackoff:   time.Millisecond,
		MaxBackoff:       4 * time.Millisecond,
		MaxResponseBytes: 1 << 20,
	}
}

// newTestClient builds a client whose jitter is the identity, so waits are
// the backoff ceilings exactly.
func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.jitter = func(d time.Duration) time.Duration { return d }
	return c
}
