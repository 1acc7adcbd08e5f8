package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/agentwarden/warden/internal/tools"
)

// hint is what tools/list says about a tool that the SDK's Tool type drops
// or blurs: whether each annotation was sent at all (the SDK decodes an
// absent readOnlyHint as false) and execution.taskSupport (not in the SDK).
type hint struct {
	annotations *tools.Annotations
	taskSupport string
}

// hints collects them from the raw messages a transport receives, before
// the SDK decodes them; ListTools reads them by tool name.
type hints struct {
	mu     sync.Mutex
	byName map[string]hint
}

// maxPeek bounds a message the peek parses (the SDK's own line limit).
const maxPeek = 16 << 20

// peek records the tools of a tools/list result; any other message is
// ignored. It runs on the transport's read path, so it is cheap for
// messages that cannot be one.
func (h *hints) peek(msg []byte) {
	if len(msg) > maxPeek || !bytes.Contains(msg, []byte(`"tools"`)) {
		return
	}
	var m struct {
		Result *struct {
			// A tools/call result has content; a tools/list result never.
			Content json.RawMessage `json:"content"`
			Tools   []struct {
				Name        string             `json:"name"`
				Annotations *tools.Annotations `json:"annotations"`
				Execution   *struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Result == nil || m.Result.Content != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byName == nil {
		h.byName = map[string]hint{}
	}
	for _, t := range m.Result.Tools {
		x := hint{annotations: t.Annotations}
		if x.annotations != nil && *x.annotations == (tools.Annotations{}) {
			x.annotations = nil
		}
		if t.Execution != nil {
			x.taskSupport = t.Execution.TaskSupport
		}
		h.byName[t.Name] = x
	}
}

func (h *hints) get(name string) hint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byName[name]
}

// httpTransport adds the configured headers to every request for the
// configured endpoint's origin (scheme, host and port), never to another,
// and lets the client see the messages: every response's (peek; a JSON
// body whole, an SSE body event by event) and every POST's (sent).
type httpTransport struct {
	next    http.RoundTripper
	headers http.Header
	// origin is the configured endpoint's, as originOf gives it.
	origin string
	peek   func([]byte)
	// sent sees the body of every POST; nil sees none.
	sent func([]byte)
}

func (t *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && originOf(req.URL) == t.origin {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			req.Header[k] = append([]string(nil), vs...)
		}
	}
	if t.sent != nil && req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(io.LimitReader(body, maxPeek+1))
			_ = body.Close()
			t.sent(b)
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		// An error, not a response: the SDK would report a 401 as a
		// broken connection ("Unauthorized" dropped on the way), and the
		// call as unreachable and worth retrying.
		return nil, refusal(resp)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		resp.Body = &tapJSON{ReadCloser: resp.Body, peek: t.peek}
	case "text/event-stream":
		resp.Body = newTapSSE(resp.Body, t.peek)
	}
	return resp, nil
}

// tapJSON keeps a JSON body as it is read and peeks at it at its end.
type tapJSON struct {
	io.ReadCloser
	peek func([]byte)
	buf  []byte
	done bool
}

func (b *tapJSON) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.done && len(b.buf)+n <= maxPeek {
		b.buf = append(b.buf, p[:n]...)
	} else {
		b.done = true
	}
	if err == io.EOF && !b.done {
		b.done = true
		b.peek(b.buf)
		b.buf = nil
	}
	return n, err
}

// tapSSE splits an event stream into events as it is read and peeks at
// each event's data.
type tapSSE struct {
	io.ReadCloser
	peek    func([]byte)
	pending []byte // an incomplete line
	data    []byte
}

func newTapSSE(rc io.ReadCloser, peek func([]byte)) *tapSSE {
	return &tapSSE{ReadCloser: rc, peek: peek}
}

func (s *tapSSE) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.pending = append(s.pending, p[:n]...)
	s.split()
	return n, err
}

// split peeks at every complete event in pending and keeps the rest.
func (s *tapSSE) split() {
	consumed := 0
	for {
		i := bytes.IndexByte(s.pending[consumed:], '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimRight(s.pending[consumed:consumed+i], "\r")
		consumed += i + 1
		switch {
		case len(line) == 0:
			if len(s.data) > 0 {
				s.peek(s.data)
				s.data = nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if len(s.data)+len(d) <= maxPeek {
				if len(s.data) > 0 {
					s.data = append(s.data, '\n')
				}
				s.data = append(s.data, d...)
			}
		}
	}
	s.pending = append(s.pending[:0], s.pending[consumed:]...)
	if len(s.pending) > maxPeek {
		s.pending = s.pending[:0]
	}
}
