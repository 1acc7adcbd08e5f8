package tools

import (
	"encoding/json"
	"fmt"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/skillstore"
)

// hintedWrite is the contract a tool gets from its annotations alone: a
// WRITE with approval (CONTRACT_SPEC §14.1), whose success is any response
// that is not empty (isError and call failures are failures before any
// judgement), so that it never retries, waits for approval and reports an
// uncertain outcome as one to verify.
const hintedWrite = `{"sideEffect":"WRITE","confirm":true,"success":{}}`

// HintedWrites returns the tools of names that the contract does not
// configure and whose server annotations hint a write (Tool.HintsWrite), in
// the order of names. listed is the server's catalog.
func HintedWrites(c *contract.Contract, names []string, listed []Tool) []string {
	by := map[string]Tool{}
	for _, t := range listed {
		by[t.Name] = t
	}
	var out []string
	for _, n := range names {
		if c.Tool(n) != nil {
			continue
		}
		if t, ok := by[n]; ok && t.HintsWrite() {
			out = append(out, n)
		}
	}
	return out
}

// WithHintedWrites returns the skill contract source with a write entry for
// each of writes under tools (comments are dropped, the rest is kept as it
// was), for the loop and the guards to treat those tools as the writes their
// servers say they are. The contract always wins: a tool it configures is
// never in writes (see HintedWrites). src unchanged when writes is empty.
func WithHintedWrites(src []byte, writes []string) ([]byte, error) {
	if len(writes) == 0 {
		return src, nil
	}
	plain, err := contract.StripComments(src)
	if err != nil {
		return nil, fmt.Errorf("tools: hinted writes: %w", err)
	}
	doc := map[string]json.RawMessage{}
	if len(plain) > 0 {
		if err := json.Unmarshal(plain, &doc); err != nil {
			return nil, fmt.Errorf("tools: hinted writes: %w", err)
		}
	}
	ts := map[string]json.RawMessage{}
	if raw, ok := doc["tools"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &ts); err != nil {
			return nil, fmt.Errorf("tools: hinted writes: tools: %w", err)
		}
	}
	for _, n := range writes {
		if _, ok := ts[n]; !ok {
			ts[n] = json.RawMessage(hintedWrite)
		}
	}
	if doc["tools"], err = json.Marshal(ts); err != nil {
		return nil, fmt.Errorf("tools: hinted writes: %w", err)
	}
	return json.Marshal(doc)
}

// ApplyHints makes the tools of a skill that the contract leaves silent and
// whose annotations hint a write into writes with approval: it returns the
// skill with its contract source and parsed contract rewritten, and the
// names it changed. A skill without such tools is returned as it is.
func ApplyHints(sk *skillstore.Skill, listed []Tool) (*skillstore.Skill, []string, error) {
	writes := HintedWrites(sk.Contract, sk.ToolNames, listed)
	if len(writes) == 0 {
		return sk, nil, nil
	}
	src, err := WithHintedWrites([]byte(sk.Profile.SkillContract), writes)
	if err != nil {
		return nil, nil, err
	}
	parsed, _, err := contract.Parse(sk.Profile.SkillKey, src)
	if err != nil {
		return nil, nil, fmt.Errorf("tools: hinted writes of skill %s: %w", sk.Profile.SkillKey, err)
	}
	out := *sk
	out.Profile.SkillContract = string(src)
	out.Contract = parsed
	return &out, writes, nil
}
