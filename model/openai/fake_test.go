package openai

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// reply is one scripted answer of the fake server.
type reply struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration // before answering; cut short when the client gives up
}

// received is one request as the fake server saw it.
type received struct {
	method, path string
	header       http.Header
	body         string
}

// fakeServer speaks the chat-completions wire format from a script of
// replies; the last reply repeats once the script runs out.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []reply
	received []received
}

func newFakeServer(t *testing.T, replies ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	rep := f.replies[min(len(f.received), len(f.replies)-1)]
	f.received = append(f.received, received{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: string(body)})
	f.mu.Unlock()
	if rep.delay > 0 {
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

func (f *fakeServer) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.received...)
}

// testConfig is a fast configuration for the fake server at url.
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
