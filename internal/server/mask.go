package server

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/loop"
)

// toolView is what the API shows of a tool from its skill's contract: its
// label and the argument paths marked sensitive (CONTRACT_SPEC §5.2).
type toolView struct {
	label     string
	sensitive []string
}

// toolViews are the agent's tools by name.
type toolViews map[string]toolView

// add records a tool's contract; the first skill naming the tool with a
// label gives it, and every skill's sensitive paths count.
func (v toolViews) add(name string, t *contract.Tool) {
	if t == nil {
		return
	}
	tv := v[name]
	if tv.label == "" {
		tv.label = t.Label
	}
	for p, a := range t.Args {
		if a != nil && a.Sensitive && !slices.Contains(tv.sensitive, p) {
			tv.sensitive = append(tv.sensitive, p)
		}
	}
	v[name] = tv
}

// maskValue masks a sensitive value as the approval builtin does: the
// first 3 and last 4 characters stay; 7 characters or fewer become "****".
func maskValue(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= 7 {
		return "****"
	}
	r := []rune(s)
	return string(r[:3]) + "****" + string(r[n-4:])
}

// maskArgs returns a tool call's arguments with the values at the tool's
// sensitive paths masked, and the plain string values it masked. Arguments
// that are not a JSON object, or name no sensitive path, come back as
// they are.
func (v toolViews) maskArgs(tool string, args []byte) ([]byte, []string) {
	paths := v[tool].sensitive
	if len(paths) == 0 || len(bytes.TrimSpace(args)) == 0 || !json.Valid(args) {
		return args, nil
	}
	var found []string
	out, changed := maskAt(args, "", paths, &found)
	if !changed {
		return args, nil
	}
	return out, found
}

// maskAt rewrites the JSON value raw found at path prefix: a value at a
// sensitive path becomes its mask (a string's, or "****"); an object is
// walked in its own key order, numbers and other values kept as written.
func maskAt(raw []byte, prefix string, paths []string, found *[]string) ([]byte, bool) {
	raw = bytes.TrimSpace(raw)
	if prefix != "" && slices.Contains(paths, prefix) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			*found = append(*found, s)
			b, _ := json.Marshal(maskValue(s))
			return b, true
		}
		return []byte(`"****"`), true
	}
	if len(raw) == 0 || raw[0] != '{' {
		return raw, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return raw, false
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	changed := false
	for i := 0; dec.More(); i++ {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return raw, false
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return raw, false
		}
		p := key
		if prefix != "" {
			p = prefix + "." + key
		}
		out, c := maskAt(val, p, paths, found)
		changed = changed || c
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(out)
	}
	buf.WriteByte('}')
	if !changed {
		return raw, false
	}
	return buf.Bytes(), true
}

// maskText replaces each of the session's known sensitive values in s by
// its mask.
func maskText(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, maskValue(v))
		}
	}
	return s
}

// maskEventLocked masks a trace event's sensitive values: the call's
// arguments at its tool's sensitive paths, and every sensitive value the
// session has seen, wherever the event's texts repeat it (a result that
// echoes it, a message quoting it). ss.mu is held.
func (ss *session) maskEventLocked(e loop.Event) loop.Event {
	if e.Input != "" {
		in, found := ss.labels.maskArgs(e.Tool, []byte(e.Input))
		e.Input = string(in)
		for _, f := range found {
			if !slices.Contains(ss.secrets, f) {
				ss.secrets = append(ss.secrets, f)
			}
		}
	}
	e.Input = maskText(e.Input, ss.secrets)
	e.Sent = maskText(e.Sent, ss.secrets)
	e.Message = maskText(e.Message, ss.secrets)
	return e
}

// maskedLocked is a task as the API shows it: the arguments its
// suspension holds masked at their tool's sensitive paths, and the
// session's known sensitive values masked in its texts. ss.mu is held.
func (ss *session) maskedLocked(v Task) Task {
	if v.Suspension != nil {
		sus := *v.Suspension
		if len(sus.Args) > 0 {
			a, _ := ss.labels.maskArgs(sus.Tool, sus.Args)
			sus.Args = a
		}
		sus.Question = maskText(sus.Question, ss.secrets)
		v.Suspension = &sus
	}
	v.Objective = maskText(v.Objective, ss.secrets)
	v.Output = maskText(v.Output, ss.secrets)
	v.Reply = maskText(v.Reply, ss.secrets)
	v.Reason = maskText(v.Reason, ss.secrets)
	return v
}
