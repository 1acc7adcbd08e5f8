package loop

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/model"
)

// EstimateTokens estimates the tokens of a text from its bytes: one token
// per three bytes, rounded up. That overestimates English and JSON (about
// four bytes a token) and matches Chinese (three bytes a character, about
// a token each), so a budget kept by the estimate is kept by the model's
// own count too.
func EstimateTokens(s string) int { return (len(s) + 2) / 3 }

// messageOverhead is what a message costs beyond its text (role, framing).
const messageOverhead = 4

func messageTokens(m model.Message) int {
	t := messageOverhead + EstimateTokens(m.Content)
	for _, tc := range m.ToolCalls {
		t += messageOverhead + EstimateTokens(tc.Name) + EstimateTokens(tc.Arguments)
	}
	return t
}

func toolsTokens(tools []model.Tool) int {
	t := 0
	for _, d := range tools {
		t += messageOverhead + EstimateTokens(d.Name) + EstimateTokens(d.Description) + EstimateTokens(string(d.Parameters))
	}
	return t
}

// Fit is what fitting a request into the budgets did.
type Fit struct {
	// Tokens is the estimated size of the request, Budget the context
	// budget.
	Tokens, Budget int
	// Compacted is how many old tool results were replaced by stubs.
	Compacted int
	// Shortened lists the prompt sections and catalog parts shortened.
	Shortened []string
	// Over reports a request still over the budget after all of it.
	Over bool
}

func (f Fit) String() string {
	s := fmt.Sprintf("request of about %d tokens, budget %d", f.Tokens, f.Budget)
	if f.Compacted > 0 {
		s += fmt.Sprintf("; %d old tool results compacted", f.Compacted)
	}
	if len(f.Shortened) > 0 {
		s += "; shortened: " + strings.Join(f.Shortened, ", ")
	}
	if f.Over {
		s += "; still over the budget"
	}
	return s
}

// request builds a turn's request within the budgets: the catalog within
// CatalogTokens, the rest of the system prompt within PromptTokens, and
// the whole within ContextTokens by compacting old tool results.
func (r *Runner) request(in PromptInput, tools []model.Tool, history []model.Message) (model.Request, Fit) {
	var fit Fit
	tools, in.Catalog, fit.Shortened = FitCatalog(tools, in.Catalog, r.cfg.CatalogTokens, r.cfg.Locale)
	var shortened []string
	in, shortened = FitPrompt(in, r.cfg.PromptTokens)
	fit.Shortened = append(fit.Shortened, shortened...)
	system := NodePrompt(in)
	fixed := messageOverhead + EstimateTokens(system) + toolsTokens(tools)
	msgs, n, total := Compact(history, r.cfg.ContextTokens-fixed, r.cfg.Locale)
	fit.Compacted, fit.Budget, fit.Tokens = n, r.cfg.ContextTokens, fixed+total
	fit.Over = fit.Tokens > fit.Budget
	req := model.Request{Messages: append([]model.Message{{Role: model.RoleSystem, Content: system}}, msgs...), Tools: tools}
	return req, fit
}

// FitCatalog keeps the tool definitions and the catalogue section of the
// prompt within budget tokens: descriptions are shortened step by step
// (to 200, 80, then 0 bytes), then the catalogue text is cut. A tool is
// never dropped: the model may need any of them, and a call to one it was
// not shown is refused anyway. The definitions are copied, never changed
// in place.
func FitCatalog(tools []model.Tool, catalog string, budget int, l abi.Locale) ([]model.Tool, string, []string) {
	cost := func(ts []model.Tool, c string) int { return toolsTokens(ts) + EstimateTokens(c) }
	if cost(tools, catalog) <= budget {
		return tools, catalog, nil
	}
	var did []string
	out := append([]model.Tool(nil), tools...)
	for _, n := range []int{200, 80, 0} {
		for i := range out {
			if len(out[i].Description) > n {
				out[i].Description = cutText(tools[i].Description, n, l)
			}
		}
		did = append(did, fmt.Sprintf("tool descriptions to %d bytes", n))
		if cost(out, catalog) <= budget {
			return out, catalog, did
		}
	}
	left := (budget - toolsTokens(out)) * 3
	if left < len(catalog) {
		catalog = cutText(catalog, max(left, 0), l)
		did = append(did, "catalogue section")
	}
	return out, catalog, did
}

// FitPrompt keeps the system prompt without its catalogue within budget
// tokens by shortening its longest free texts first: the skill manual,
// the agent's five texts, the inputs. The rules, the phase hint and the
// reflection steps are the loop's own and short; they stay whole.
func FitPrompt(in PromptInput, budget int) (PromptInput, []string) {
	cost := func(p PromptInput) int {
		p.Catalog = ""
		return EstimateTokens(NodePrompt(p))
	}
	var did []string
	for range 16 {
		over := (cost(in) - budget) * 3
		if over <= 0 {
			break
		}
		fields := []struct {
			name string
			s    *string
		}{{"manual", &in.Manual}, {"identity", &in.Agent.IdentityDesc}, {"mission", &in.Agent.MissionDesc},
			{"boundary", &in.Agent.BoundaryDesc}, {"style", &in.Agent.StyleDesc}, {"principles", &in.Agent.PrincipleDesc},
			{"inputs", &in.Inputs}}
		longest := 0
		for i, f := range fields {
			if len(*f.s) > len(*fields[longest].s) {
				longest = i
			}
		}
		f := fields[longest]
		if len(*f.s) == 0 {
			break
		}
		*f.s = cutText(*f.s, max(len(*f.s)-over-16, 0), in.Locale)
		if len(did) == 0 || did[len(did)-1] != f.name {
			did = append(did, f.name)
		}
	}
	return in, did
}

// cutText cuts s to at most n bytes on a character boundary and marks the
// cut.
func cutText(s string, n int, l abi.Locale) string {
	mark := textFor(l, txtCut)
	if len(s) <= n {
		return s
	}
	if n <= len(mark) {
		return ""
	}
	return cutString(s, n-len(mark)) + mark
}

// evidenceLines match the evidence line ToolMessage writes (txtMsgEvidence),
// in either locale, as a whole line: an "[ev:…]" anywhere else (the
// tool's own data, a failure's body) is not the result's evidence.
var evidenceLines = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, t := range texts[txtMsgEvidence] {
		parts := strings.Split(t, "%s")
		if len(parts) != 3 {
			panic("loop: the evidence line has not two ids")
		}
		out = append(out, regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(parts[0])+`([^\]\s]+)`+
			regexp.QuoteMeta(parts[1])+`([^\]\s]+)`+regexp.QuoteMeta(parts[2])+`\r?$`))
	}
	return out
}()

// evidenceLineID is the evidence id of a tool message's evidence line, or "".
func evidenceLineID(content string) string {
	for _, re := range evidenceLines {
		for _, m := range re.FindAllStringSubmatch(content, -1) {
			if m[1] == m[2] {
				return m[1]
			}
		}
	}
	return ""
}

// Compact returns history within budget tokens, with n old tool results
// replaced by stubs, and its estimated size. Tool results go oldest first;
// the results of the latest assistant turn stay whole, and so does every
// message that is not a tool result. A stub is still a tool message
// answering the same call, and names the tool and the evidence id (read
// from the result's [ev:<id>]) so that the result can be read again with
// builtin_evidence_get and cited. A result without evidence keeps its
// first line, the summary or the reason. history itself is not changed.
func Compact(history []model.Message, budget int, l abi.Locale) ([]model.Message, int, int) {
	total := 0
	for _, m := range history {
		total += messageTokens(m)
	}
	if total <= budget {
		return history, 0, total
	}
	out := append([]model.Message(nil), history...)
	newest := len(out)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == model.RoleAssistant && len(out[i].ToolCalls) > 0 {
			newest = i
			break
		}
	}
	tools := map[string]string{}
	n := 0
	for i := 0; i < newest && total > budget; i++ {
		m := out[i]
		for _, tc := range m.ToolCalls {
			tools[tc.ID] = tc.Name
		}
		if m.Role != model.RoleTool {
			continue
		}
		stub := stubOf(m.Content, tools[m.ToolCallID], l)
		if len(stub) >= len(m.Content) {
			continue
		}
		before := messageTokens(m)
		m.Content = stub
		out[i] = m
		total += messageTokens(m) - before
		n++
	}
	return out, n, total
}

func stubOf(content, tool string, l abi.Locale) string {
	if tool == "" {
		tool = "?"
	}
	if ev := evidenceLineID(content); ev != "" {
		return textFor(l, txtMsgCompacted, tool, ev, ev, ev)
	}
	first, _, _ := strings.Cut(content, "\n")
	return textFor(l, txtMsgCompactedNoEvidence, tool, cutText(first, 200, l))
}
