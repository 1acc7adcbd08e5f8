package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/state"
	tscripted "github.com/agentwarden/warden/internal/tools/scripted"
	"github.com/agentwarden/warden/loop"
)

// check returns every expectation of e that does not hold.
//
// It stays long: one short, independent check per expectation; split,
// they would only be scattered.
func check(e Expect, n state.Node, t state.Task, events []loop.Event, systems []prompt, tools *tscripted.Server, tp *tenantPlugins, sleeps []time.Duration) []string {
	var miss []string
	add := func(format string, a ...any) { miss = append(miss, fmt.Sprintf(format, a...)) }
	miss = append(miss, tp.checkInstall(e.Install)...)
	if e.Status != "" && string(n.Status) != e.Status {
		add("node status %s, want %s (reason %q)", n.Status, e.Status, n.Reason)
	}
	if e.TaskStatus != "" && string(t.Status) != e.TaskStatus {
		add("task status %s, want %s", t.Status, e.TaskStatus)
	}
	if e.Output != "" && !strings.Contains(n.Output, e.Output) {
		add("node output %q does not contain %q", n.Output, e.Output)
	}
	if e.Reason != "" && !strings.Contains(n.Reason, e.Reason) {
		add("node reason %q does not contain %q", n.Reason, e.Reason)
	}
	if e.Suspension != "" {
		switch {
		case n.Suspension == nil:
			add("no suspension, want %s", e.Suspension)
		case n.Suspension.Kind != e.Suspension:
			add("suspension %s, want %s", n.Suspension.Kind, e.Suspension)
		}
	}
	if e.Suspensions != nil {
		var got []string
		for _, ev := range events {
			if ev.Kind == loop.KindSuspend {
				got = append(got, ev.Status)
			}
		}
		if strings.Join(got, ",") != strings.Join(e.Suspensions, ",") {
			add("suspensions [%s], want [%s]", strings.Join(got, " "), strings.Join(e.Suspensions, " "))
		}
	}
	next := 0
	for i, want := range e.Ordered {
		found, from := false, next
		for next < len(events) {
			ev := events[next]
			next++
			if want.matches(ev) {
				found = true
				break
			}
		}
		if !found {
			add("ordered event %d %s: not found after the events before it%s", i+1, want, closest(want, events))
			next = from
		}
	}
	for i, want := range e.Unordered {
		if !anyMatch(want, events) {
			add("event %d %s: not found%s", i+1, want, closest(want, events))
		}
	}
	for i, bad := range e.Absent {
		for _, ev := range events {
			if bad.matches(ev) {
				add("absent event %d %s: found %s", i+1, bad, eventJSON(ev))
				break
			}
		}
	}
	if p := e.Prompts; p != nil {
		asked := 0
		for i, pr := range systems {
			if p.Node != "" && pr.node != p.Node && pr.skill != p.Node {
				continue
			}
			asked++
			sys := pr.text
			for _, s := range p.Contain {
				if !strings.Contains(sys, s) {
					add("prompt of turn %d does not contain %q", i+1, s)
				}
			}
			for _, s := range p.NotContain {
				if strings.Contains(sys, s) {
					add("prompt of turn %d contains %q", i+1, s)
				}
			}
		}
		if asked == 0 && p.Node != "" {
			add("no prompt was sent for %s", p.Node)
		}
	}
	if tc := e.Tools; tc != nil {
		if tc.NoDuplicateWrites {
			for _, d := range tools.Duplicates() {
				add("duplicate write: %s %s (call %d)", d.Tool, d.Args, d.Attempt)
			}
		}
		for tool, want := range tc.Calls {
			got := tools.Count(tool)
			if n, ok := tp.calls(tool); ok {
				got = n
			}
			if got != want {
				add("tool %s called %d times, want %d", tool, got, want)
			}
		}
		for tool, want := range tc.Received {
			var got []json.RawMessage
			for _, c := range tools.Calls() {
				if c.Tool == tool {
					got = append(got, c.Args)
				}
			}
			if len(got) != len(want) {
				add("tool %s received %d calls, want %d", tool, len(got), len(want))
			}
			for i := 0; i < len(got) && i < len(want); i++ {
				if !sameJSON(got[i], want[i]) {
					add("tool %s call %d received %s, want %s", tool, i+1, got[i], compactJSON(want[i]))
				}
			}
		}
		if tc.Backoff != nil {
			var got, want []string
			for _, d := range sleeps {
				got = append(got, d.String())
			}
			for _, s := range tc.Backoff {
				d, _ := time.ParseDuration(s)
				want = append(want, d.String())
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				add("backoff [%s], want [%s]", strings.Join(got, " "), strings.Join(want, " "))
			}
		}
	}
	return miss
}

func (e Expect) refusesLoad(skill string) bool {
	for _, l := range e.Load {
		if l.Skill == skill {
			return true
		}
	}
	return false
}

// checkLoad compares the skills refused at load with the expected ones.
func checkLoad(want []LoadRefusal, refused map[string][]*contract.LoadError) []string {
	var miss []string
	for _, w := range want {
		ps, ok := refused[w.Skill]
		if !ok {
			miss = append(miss, fmt.Sprintf("skill %s loaded, want it refused for rule %s", w.Skill, w.Rule))
			continue
		}
		found := false
		var rules []string
		for _, p := range ps {
			rules = append(rules, string(p.Rule))
			if string(p.Rule) == w.Rule && strings.Contains(p.Error(), w.Contains) {
				found = true
			}
		}
		if !found {
			miss = append(miss, fmt.Sprintf("skill %s refused for rules [%s], want rule %s%s", w.Skill, strings.Join(rules, " "), w.Rule,
				map[bool]string{true: "", false: fmt.Sprintf(" with %q", w.Contains)}[w.Contains == ""]))
		}
	}
	return miss
}

// sameJSON compares two JSON texts as values: key order and 1.0 against 1
// do not matter, every digit does (1234567890123456789 is not
// 1234567890123456800, as it would be through float64).
func sameJSON(a, b json.RawMessage) bool {
	x, errx := contract.CanonicalJSON(a)
	y, erry := contract.CanonicalJSON(b)
	return errx == nil && erry == nil && bytes.Equal(x, y)
}

func compactJSON(b json.RawMessage) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// matches reports whether ev has every field e sets.
func (e Event) matches(ev loop.Event) bool {
	switch {
	case e.Kind != "" && string(ev.Kind) != e.Kind,
		e.Tool != "" && ev.Tool != e.Tool,
		e.Outcome != "" && ev.Outcome != e.Outcome,
		e.Code != "" && ev.Name != e.Code && ev.Code != e.Code,
		e.Category != "" && ev.Category != e.Category,
		e.Status != "" && ev.Status != e.Status,
		e.Level != "" && ev.Level != e.Level,
		e.Message != "" && ev.Message != e.Message,
		e.Stalls != nil && ev.Stalls != *e.Stalls,
		e.Guard != "" && ev.Guard != e.Guard,
		e.Plugin != "" && ev.Plugin != e.Plugin:
		return false
	}
	for _, s := range e.Contains {
		if !strings.Contains(ev.Message, s) {
			return false
		}
	}
	for _, s := range e.Sent {
		if !strings.Contains(ev.Sent, s) {
			return false
		}
	}
	return true
}

// String renders the fields e sets.
func (e Event) String() string {
	var parts []string
	for _, kv := range [][2]string{{"kind", e.Kind}, {"tool", e.Tool}, {"outcome", e.Outcome}, {"code", e.Code},
		{"category", e.Category}, {"status", e.Status}, {"level", e.Level}, {"message", e.Message}, {"guard", e.Guard}, {"plugin", e.Plugin}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	for _, s := range e.Contains {
		parts = append(parts, fmt.Sprintf("contains=%q", s))
	}
	for _, s := range e.Sent {
		parts = append(parts, fmt.Sprintf("sent=%q", s))
	}
	if e.Stalls != nil {
		parts = append(parts, fmt.Sprintf("stalls=%d", *e.Stalls))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func anyMatch(e Event, events []loop.Event) bool {
	for _, ev := range events {
		if e.matches(ev) {
			return true
		}
	}
	return false
}

// closest names the event of the same kind and tool that came nearest, to
// make a mismatch readable.
func closest(e Event, events []loop.Event) string {
	for _, ev := range events {
		if (e.Kind == "" || string(ev.Kind) == e.Kind) && (e.Tool == "" || ev.Tool == e.Tool) {
			return "; nearest: " + eventJSON(ev)
		}
	}
	return ""
}
