package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/agentwarden/warden/internal/model"
)

// A streamed chat completion: server-sent events, each "data:" a chunk,
// the last "data: [DONE]".
type wireChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   json.RawMessage `json:"content"`
			Refusal   *string         `json:"refusal"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

// partialCall is a tool call being assembled from its deltas.
type partialCall struct {
	index         int
	id, typ, name string
	args          strings.Builder
}

// assembler builds one Response from the chunks of a stream, so that a
// streamed reply gives exactly the Response its non-streamed form gives.
type assembler struct {
	content, refusal strings.Builder
	hasRefusal       bool
	calls            []*partialCall
	finish           *string
	usage            *wireUsage
	done             bool
}

func (a *assembler) call(index *int, id string) *partialCall {
	if index == nil {
		// A server that sends no index continues the last call unless a
		// new id starts another.
		if n := len(a.calls); n > 0 && (id == "" || id == a.calls[n-1].id) {
			return a.calls[n-1]
		}
		i := len(a.calls)
		index = &i
	}
	for _, c := range a.calls {
		if c.index == *index {
			return c
		}
	}
	c := &partialCall{index: *index}
	a.calls = append(a.calls, c)
	return c
}

// add folds one chunk in. It returns the provider's error when the chunk
// is one.
func (a *assembler) add(data []byte, apiKey string) (*model.ProviderError, bool) {
	var ch wireChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return malformed("an event is not a chat completion chunk (%s): %s", strings.TrimPrefix(err.Error(), "json: "), excerpt(data, apiKey)), false
	}
	if ch.Error != nil {
		return inBodyError(ch.Error, apiKey)
	}
	if ch.Usage != nil {
		a.usage = ch.Usage
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue // only the first choice is read, as without streaming
		}
		if len(c.Delta.Content) > 0 {
			text, err := contentText(c.Delta.Content)
			if err != nil {
				return malformed("%v", err), false
			}
			a.content.WriteString(text)
		}
		if c.Delta.Refusal != nil {
			a.hasRefusal = true
			a.refusal.WriteString(*c.Delta.Refusal)
		}
		for _, d := range c.Delta.ToolCalls {
			p := a.call(d.Index, d.ID)
			// A name streams in pieces, concatenated as the wire format
			// says ("ab" then "ab" is "abab"). Some servers repeat the
			// call's header, id and whole name, with every chunk: a delta
			// that carries the call's id again and equals the name so far
			// is such a repeat, not a piece.
			repeat := d.ID != "" && d.ID == p.id && d.Function.Name == p.name
			if d.ID != "" {
				p.id = d.ID
			}
			if d.Type != "" {
				p.typ = d.Type
			}
			if !repeat {
				p.name += d.Function.Name
			}
			p.args.WriteString(argumentText(d.Function.Arguments))
		}
		if c.FinishReason != nil {
			a.finish = c.FinishReason
		}
	}
	return nil, false
}

func (a *assembler) response() (model.Response, *model.ProviderError) {
	out := model.Response{
		Message: model.Message{Role: model.RoleAssistant, Content: a.content.String()},
		Usage:   a.usage.usage(),
	}
	if a.finish != nil {
		out.FinishReason = model.FinishReason(*a.finish)
	}
	if a.hasRefusal {
		out.Refusal = a.refusal.String()
	}
	calls := slices.Clone(a.calls)
	slices.SortStableFunc(calls, func(x, y *partialCall) int { return x.index - y.index })
	for i, p := range calls {
		call, err := toolCall(i, p.id, p.typ, p.name, p.args.String())
		if err != nil {
			return model.Response{}, err
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, call)
	}
	return out, nil
}

// errStreamTooLarge marks a stream that passed MaxResponseBytes.
var errStreamTooLarge = errors.New("stream too large")

// decodeStream reads an event stream into a Response. A stream cut before
// its end is an unavailable provider (sending again may succeed); a broken
// event is a malformed reply. readErr classifies a failure to read.
func decodeStream(r io.Reader, limit int64, apiKey string, readErr func(error) (*model.ProviderError, bool, error)) (model.Response, *model.ProviderError, bool, error) {
	sc := bufio.NewScanner(&limited{r: r, n: limit})
	sc.Buffer(make([]byte, 0, 64<<10), int(min(limit, 1<<30))+1)
	var a assembler
	var data bytes.Buffer
	hasData := false
	dispatch := func() (*model.ProviderError, bool) {
		if !hasData {
			return nil, false
		}
		d := bytes.TrimSpace(data.Bytes())
		data.Reset()
		hasData = false
		if string(d) == "[DONE]" {
			a.done = true
			return nil, false
		}
		if len(d) == 0 {
			return nil, false
		}
		return a.add(d, apiKey)
	}
	for !a.done && sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if pe, retry := dispatch(); pe != nil {
				return model.Response{}, pe, retry, nil
			}
		case line[0] == ':': // a comment, sent to keep the connection open
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			if string(field) == "data" {
				if hasData {
					data.WriteByte('\n')
				}
				data.Write(value)
				hasData = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, errStreamTooLarge) || errors.Is(err, bufio.ErrTooLong) {
			return model.Response{}, malformed("the event stream exceeds %d bytes", limit), false, nil
		}
		pe, retry, stop := readErr(err)
		return model.Response{}, pe, retry, stop
	}
	if pe, retry := dispatch(); pe != nil { // a last event without its blank line
		return model.Response{}, pe, retry, nil
	}
	if !a.done && a.finish == nil {
		return model.Response{}, &model.ProviderError{Kind: model.ErrUnavailable, Status: 200,
			Message: "the event stream ended before the reply did"}, true, nil
	}
	resp, pe := a.response()
	return resp, pe, false, nil
}

// limited reads at most n bytes, then fails with errStreamTooLarge.
type limited struct {
	r io.Reader
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errStreamTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
