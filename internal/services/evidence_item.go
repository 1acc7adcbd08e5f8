package services

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// The evidence services build, natively, what the Evidence guard registers
// for an executed call (FAILURES_AND_EVIDENCE §4, §6; CONTRACT_SPEC §6.3):
// the EvidenceItem, the entities of its extracts, and the truncated
// observation of a response over the size budget.

func init() {
	Register("evidence.register", evidenceRegister)
	Register("evidence.entities", evidenceEntities)
	Register("evidence.truncate", evidenceTruncate)
}

// Evidence defaults.
const (
	// EvidenceBudget is the default size budget of a payload in bytes
	// (config maxPayloadBytes).
	EvidenceBudget = 16 << 10
	// EvidenceExcerpt is the size of an item's excerpt in bytes.
	EvidenceExcerpt = 200
	// EvidenceLocator bounds an item's locator (the tool and its canonical
	// arguments) in bytes, so that a call with arguments near the input
	// limit still has an item within the plugin's output limit.
	EvidenceLocator = 1 << 10
	// EvidenceMaxValues bounds the flattened extract values of one item.
	EvidenceMaxValues = 1000
)

const evidenceSep = "\x1f"

// evidenceCall is what the services derive from an after-phase request.
type evidenceCall struct {
	tool     string
	resp     []byte
	status   abi.Outcome
	ok       bool // business ok
	budget   int
	id       string
	toolSpec *contract.Tool
}

func readEvidenceCall(req []byte) (evidenceCall, error) {
	t, err := requestToolContract(req)
	if err != nil {
		return evidenceCall{}, err
	}
	e := evidenceCall{tool: gjson.GetBytes(req, abi.FieldTool).String(), resp: responseBytes(req), toolSpec: t, budget: EvidenceBudget}
	if n := gjson.GetBytes(req, "config.maxPayloadBytes").Int(); n > 0 {
		e.budget = int(n)
	}
	outcome := gjson.GetBytes(req, abi.FieldResult+".outcome").String()
	code := abi.Code(gjson.GetBytes(req, abi.FieldResult+".code").String())
	// A call the business or the output schema judged failed still ran and
	// returned: its evidence is SUCCESS with businessOk false (§6.1).
	judged := code == abi.ToolBusinessFailed || code == abi.OutputSchemaMismatch
	switch {
	case outcome == "SUCCESS" || outcome == "FAILED" && (judged || code == abi.FingerprintRepeat):
		e.status = abi.OutcomeSuccess
		e.ok = !judged && t.Judge(e.resp).OK
	case outcome == "FAILED":
		e.status = abi.OutcomeFailed
	default:
		return evidenceCall{}, fmt.Errorf("services: evidence of a %s call: only executed calls have evidence", outcome)
	}
	e.id = evidenceID(req, e.tool, e.resp)
	return e, nil
}

// evidenceID is "ev_" and 16 hex digits of the SHA-256 of the call id, so
// that replaying a call gives the same id; a request without a call id
// hashes the tool, the canonical arguments and the response instead.
func evidenceID(req []byte, tool string, resp []byte) string {
	h := sha256.New()
	if id := gjson.GetBytes(req, abi.FieldCallID).String(); id != "" {
		h.Write([]byte(id))
	} else {
		h.Write([]byte(tool))
		h.Write([]byte{0})
		h.Write(Canonical(boundArgs(req)))
		h.Write([]byte{0})
		h.Write(resp)
	}
	return "ev_" + hex.EncodeToString(h.Sum(nil))[:16]
}

// evidenceRegister: in is the retrieval time (the guest's clock, RFC 3339).
// The answer is a header line — "T" or "-" for truncated, the evidence id,
// the response size, the entity count and the budget, joined by evidenceSep
// — then the evidence.register payload (abi.EvidenceItem).
func evidenceRegister(req, in []byte) ([]byte, error) {
	e, err := readEvidenceCall(req)
	if err != nil {
		return nil, err
	}
	it := abi.EvidenceItem{
		ID: e.id, SourceType: sourceType(req, e.tool), Locator: contract.Truncate(append([]byte(e.tool+" "), Canonical(boundArgs(req))...), EvidenceLocator),
		RetrievedAt: string(in), ToolCallID: gjson.GetBytes(req, abi.FieldCallID).String(),
		Tool: e.tool, Status: e.status, BusinessOK: e.ok, Result: abi.ResultFailure, Size: len(e.resp),
	}
	if len(e.resp) > 0 {
		sum := sha256.Sum256(e.resp)
		it.ContentHash = hex.EncodeToString(sum[:])
		it.Excerpt = contract.Truncate(compactJSON(e.resp), EvidenceExcerpt)
		if len(e.resp) > e.budget {
			it.Truncated = true
			it.Payload, _ = json.Marshal(contract.Truncate(e.resp, e.budget))
		} else {
			it.Payload = json.RawMessage(e.resp)
		}
	}
	entities := 0
	if e.ok {
		x := extract(e.toolSpec, boundArgs(req).Raw, e.resp)
		it.Empty = x.Empty
		it.Result = abi.ResultWithData
		if x.Empty {
			it.Result = abi.ResultEmpty
		}
		for _, xi := range x.Items {
			name := xi.Key
			if name == "" {
				name = xi.Path
			}
			if it.Counts == nil {
				it.Extracts, it.Counts = map[string]json.RawMessage{}, map[string]int{}
			}
			it.Counts[name] = xi.Count
			if xi.Value.Exists() {
				it.Extracts[name] = json.RawMessage(xi.Value.Raw)
				it.Values = appendLeaves(it.Values, xi.Value)
			}
			entities += len(xi.Entities)
		}
	}
	item, err := json.Marshal(it)
	if err != nil {
		return nil, fmt.Errorf("services: evidence item: %w", err)
	}
	flag := "-"
	if it.Truncated {
		flag = "T"
	}
	out := make([]byte, 0, len(item)+64)
	out = append(out, flag...)
	for _, f := range []string{e.id, strconv.Itoa(len(e.resp)), strconv.Itoa(entities), strconv.Itoa(e.budget)} {
		out = append(out, evidenceSep...)
		out = append(out, f...)
	}
	out = append(out, '\n')
	return append(out, item...), nil
}

// sourceType is the item's FAILURES_AND_EVIDENCE §4 source type: what the
// plugin's config maps the tool to (config.sourceTypes), else "query": a
// business tool's answer is the result of a query to a system of record,
// and for a write it is that system's record of the write.
func sourceType(req []byte, tool string) string {
	if s := gjson.GetBytes(req, "config.sourceTypes."+escapeKey(tool)).String(); s != "" {
		return s
	}
	return "query"
}

// appendLeaves adds the scalar leaves of r as strings, skipping nulls and
// duplicates, up to EvidenceMaxValues.
func appendLeaves(out []string, r gjson.Result) []string {
	if len(out) >= EvidenceMaxValues {
		return out
	}
	switch {
	case r.IsObject() || r.IsArray():
		r.ForEach(func(_, v gjson.Result) bool {
			out = appendLeaves(out, v)
			return len(out) < EvidenceMaxValues
		})
	case r.Type == gjson.Null:
	default:
		s := r.String()
		for _, x := range out {
			if x == s {
				return out
			}
		}
		out = append(out, s)
	}
	return out
}

func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return bytes.TrimSpace(b)
	}
	return buf.Bytes()
}

// evidenceEntities: in is ignored. The answer is one entity.record payload
// (abi.Entity) per line for the extracts with an entity spec of a
// business-ok call; a WRITE tool's entities merge its arguments under the
// response (§6.3). A failed call has none.
func evidenceEntities(req, _ []byte) ([]byte, error) {
	e, err := readEvidenceCall(req)
	if err != nil || !e.ok {
		return nil, err
	}
	var out []byte
	for _, ent := range extract(e.toolSpec, boundArgs(req).Raw, e.resp).Entities() {
		b, err := json.Marshal(abi.Entity{Type: ent.Type, ID: ent.ID, Name: ent.Name, Attrs: nonEmpty(ent.Attrs)})
		if err != nil {
			return nil, fmt.Errorf("services: entity: %w", err)
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, b...)
	}
	return out, nil
}

func nonEmpty(m map[string]json.RawMessage) map[string]json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	return m
}

// evidenceTruncate: in is ignored. For a response over the budget the
// answer is the length of the new observation text in decimal, a newline,
// the text — the result's text with a note that the payload was cut and how
// to read the rest — and the new data: {"truncated":true, "size", "limit",
// "evidenceId", "head"} where head is the first limit bytes of the response.
func evidenceTruncate(req, _ []byte) ([]byte, error) {
	e, err := readEvidenceCall(req)
	if err != nil {
		return nil, err
	}
	l := requestLocale(req)
	size, limit := strconv.Itoa(len(e.resp)), strconv.Itoa(e.budget)
	note := "返回内容共 " + size + " 字节，超过 " + limit + " 字节上限，这里只给出前 " + limit + " 字节（truncated: true）；完整内容已登记为证据 " + e.id + "，用 builtin_evidence_get 分页读取其余部分"
	join := "；"
	if l == abi.LocaleEN {
		note = "the response has " + size + " bytes, over the " + limit + "-byte limit, so only the first " + limit + " bytes are shown (truncated: true); the whole response is evidence " + e.id + ", read the rest page by page with builtin_evidence_get"
		join = "; "
	}
	text := strings.TrimRight(gjson.GetBytes(req, abi.FieldResult+".text").String(), "。.！!；; ")
	if text != "" {
		text += join
	}
	text += note
	data, err := json.Marshal(struct {
		Truncated  bool   `json:"truncated"`
		Size       int    `json:"size"`
		Limit      int    `json:"limit"`
		EvidenceID string `json:"evidenceId"`
		Head       string `json:"head"`
	}{true, len(e.resp), e.budget, e.id, contract.Truncate(e.resp, e.budget)})
	if err != nil {
		return nil, fmt.Errorf("services: truncated data: %w", err)
	}
	out := strconv.AppendInt(nil, int64(len(text)), 10)
	out = append(out, '\n')
	out = append(out, text...)
	return append(out, data...), nil
}

// lastExtraction remembers the most recent extraction: the Evidence guard
// asks evidence.register and then evidence.entities about the same call, and
// extraction is the expensive part of both. A hit needs the same parsed tool
// contract, arguments and response; the result is only read.
var lastExtraction struct {
	sync.Mutex
	tool *contract.Tool
	args string
	resp string
	x    contract.Extraction
}

func extract(t *contract.Tool, args string, resp []byte) contract.Extraction {
	lastExtraction.Lock()
	defer lastExtraction.Unlock()
	if lastExtraction.tool == t && lastExtraction.args == args && lastExtraction.resp == string(resp) {
		return lastExtraction.x
	}
	x := t.Extract([]byte(args), resp)
	lastExtraction.tool, lastExtraction.args, lastExtraction.resp, lastExtraction.x = t, args, string(resp), x
	return x
}
