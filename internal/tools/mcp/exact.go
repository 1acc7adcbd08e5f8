package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// exact keeps the result of each call under way as the server wrote it.
//
// The SDK decodes a result into Go values: structuredContent becomes
// map[string]any with float64 numbers, so 1234567890123456789 would come
// back 1234567890123456800 and key order would be lost. The transports show
// exact every message before the SDK sees it (sent: what goes to the
// server; received: what comes back), and exact keeps the raw result of a
// request that carries the progress token of a call it was told to expect,
// matched by JSON-RPC id.
type exact struct {
	mu sync.Mutex
	// want holds the progress tokens of the calls under way.
	want map[string]bool
	// ids maps the JSON-RPC id of a request (its JSON text) to its token.
	ids map[string]string
	// raw holds the raw result of each token's request, once received.
	raw map[string]json.RawMessage
}

// tokenMark is in every progress token a Client sets: a message without it
// is not one of its calls, and is not parsed.
const tokenMark = `"warden-`

// expect registers a call's progress token before its request is sent.
func (x *exact) expect(token string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.want == nil {
		x.want, x.ids, x.raw = map[string]bool{}, map[string]string{}, map[string]json.RawMessage{}
	}
	x.want[token] = true
}

// take returns the raw result of the token's request, if one came, and
// forgets the token.
func (x *exact) take(token string) (json.RawMessage, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	raw, ok := x.raw[token]
	delete(x.raw, token)
	delete(x.want, token)
	for id, t := range x.ids {
		if t == token {
			delete(x.ids, id)
		}
	}
	return raw, ok
}

// sent sees a message (or a batch) on its way to the server.
func (x *exact) sent(msg []byte) {
	if len(msg) > maxPeek || !bytes.Contains(msg, []byte(tokenMark)) {
		return
	}
	for _, m := range messages(msg) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(m, &req) != nil || len(req.ID) == 0 {
			continue
		}
		var token string
		if json.Unmarshal(req.Params.Meta.ProgressToken, &token) != nil {
			continue
		}
		x.mu.Lock()
		if x.want[token] {
			x.ids[idKey(req.ID)] = token
		}
		x.mu.Unlock()
	}
}

// received sees a message (or a batch) from the server before the SDK
// decodes it.
func (x *exact) received(msg []byte) {
	x.mu.Lock()
	waiting := len(x.ids) > 0
	x.mu.Unlock()
	if !waiting || len(msg) > maxPeek || !bytes.Contains(msg, []byte(`"result"`)) {
		return
	}
	for _, m := range messages(msg) {
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(m, &resp) != nil || len(resp.ID) == 0 || len(resp.Result) == 0 {
			continue
		}
		x.mu.Lock()
		if token, ok := x.ids[idKey(resp.ID)]; ok {
			x.raw[token] = resp.Result
		}
		x.mu.Unlock()
	}
}

// messages splits a batch into its messages; a single message is itself.
func messages(msg []byte) []json.RawMessage {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return nil
	}
	if msg[0] != '[' {
		return []json.RawMessage{msg}
	}
	var batch []json.RawMessage
	if json.Unmarshal(msg, &batch) != nil {
		return nil
	}
	return batch
}

// idKey is a JSON-RPC id's compact text: 7 and "7" stay apart.
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// lineTap passes writes through and shows each complete line to see.
type lineTap struct {
	io.WriteCloser
	see     func([]byte)
	mu      sync.Mutex
	pending []byte
}

func (t *lineTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.pending = append(t.pending, p...)
	done := 0
	for {
		i := bytes.IndexByte(t.pending[done:], '\n')
		if i < 0 {
			break
		}
		t.see(t.pending[done : done+i])
		done += i + 1
	}
	t.pending = append(t.pending[:0], t.pending[done:]...)
	if len(t.pending) > maxPeek {
		t.pending = t.pending[:0]
	}
	t.mu.Unlock()
	return t.WriteCloser.Write(p)
}
