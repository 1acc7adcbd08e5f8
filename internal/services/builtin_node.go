package services

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// Services of the node builtins (plugins/builtins/node).
func init() {
	Register("builtin.output_set", builtinService(builtinOutputSet))
	Register("builtin.state_set", builtinService(builtinStateSet))
	Register("builtin.evidence_get", builtinService(builtinEvidenceGet))
}

// builtinOutputSet decides builtin_output_set(key, value, sourceType, sourceRef,
// sourcePath?) (CONTRACT_SPEC §8, TOOL_OBSERVATION §7.3 and §9 scenario 10).
// Every rejection names the failing item; its next step lists the keys and
// source types that may be written, and for an output that is not required
// adds that it may be left out.
func builtinOutputSet(c *builtinCall) builtinDecision {
	n, d := c.node()
	if d != nil {
		return *d
	}
	ct, d := c.contract(n)
	if d != nil {
		return *d
	}
	var (
		ev       abi.EvidenceView
		conv     abi.ConversationView
		fu       abi.FollowUpView
		entities abi.EntitiesView
	)
	if d := c.views(abi.CapStateEvidence, &ev, abi.CapStateConversation, &conv, abi.CapStateFollowUp, &fu, abi.CapStateEntities, &entities); d != nil {
		return *d
	}
	key := c.arg("key")
	out := ct.Outputs[key]
	keys := c.text(btxAnyKey)
	if len(ct.Outputs) > 0 {
		keys = c.list(ct.OutputNames())
	}
	var sources []string
	if out != nil || len(ct.Outputs) == 0 {
		sources = builtinAllowedSources(out)
	} else {
		for _, k := range ct.OutputNames() {
			for _, s := range builtinAllowedSources(ct.Outputs[k]) {
				if !slices.Contains(sources, s) {
					sources = append(sources, s)
				}
			}
		}
	}
	next := abi.NextOutputSet.Text(c.l, "keys", keys, "sources", c.list(sources))
	if (out != nil && !out.Required) || len(ct.Outputs) == 0 {
		next = c.clauses(next, abi.NextOptionalOutput.Text(c.l))
	}
	switch {
	case key == "":
		return builtinRejected(abi.OutputPathInvalid, abi.OutputPathInvalid.Reason(c.l), next)
	case contract.IsPlatformField(key) || slices.Contains(contract.HiddenPlatformFields, key):
		return builtinRejected(abi.PlatformFieldForbidden, abi.PlatformFieldForbidden.Reason(c.l, "key", key), next)
	case out == nil && len(ct.Outputs) > 0:
		return builtinRejected(abi.OutputWriteForbidden, abi.OutputWriteForbidden.Reason(c.l, "key", key), next)
	}
	reject := func(id builtinTextID, kv ...string) builtinDecision {
		detail := c.text(id, append([]string{"key", key}, kv...)...)
		return builtinRejected(abi.SourceReject, abi.SourceReject.Reason(c.l, "detail", detail), next)
	}
	value := c.args.Get("value")
	source, ref, path := c.arg("sourceType"), c.arg("sourceRef"), c.arg("sourcePath")
	switch {
	case !value.Exists():
		return reject(btxValueMissing)
	case source == string(contract.SourceModel):
		return reject(btxSourceModel)
	case !slices.Contains(builtinAllSources, contract.SourceType(source)):
		return reject(btxSourceUnknown, "source", source)
	case !slices.Contains(sources, source):
		return reject(btxSourceNotAccepted, "source", source)
	}
	switch contract.SourceType(source) {
	case contract.SourceEvidence:
		if ref == "" {
			return reject(btxSourceRefMissing)
		}
		i := slices.IndexFunc(ev.Items, func(it abi.EvidenceItem) bool { return it.ID == ref })
		if i < 0 {
			return reject(btxEvidenceMissing, "ref", ref)
		}
		it := ev.Items[i]
		if it.Status != abi.OutcomeSuccess || !it.BusinessOK {
			return reject(btxEvidenceNotOK, "ref", ref)
		}
		if path == "" {
			if !slices.Contains(it.Values, value.String()) && !builtinSameValue(value, gjson.ParseBytes(it.Payload)) {
				return reject(btxEvidenceNoValue, "ref", ref)
			}
			break
		}
		at := builtinEvidenceAt(it, path)
		if !at.Exists() {
			return reject(btxEvidencePathMissing, "ref", ref, "path", path)
		}
		if !builtinSameValue(value, at) {
			return reject(btxEvidenceValueDiffers, "ref", ref, "path", path)
		}
	case contract.SourceContract:
		if out == nil || out.Constant == nil {
			return reject(btxNoConstant)
		}
		if !builtinSameValue(value, gjson.ParseBytes(out.Constant)) {
			return reject(btxConstantDiffers)
		}
	case contract.SourceUser:
		if !builtinFromUser(value, key, conv, fu) {
			return reject(btxUserValueMissing)
		}
	case contract.SourceNodeOutput, contract.SourceShared, contract.SourceSession, contract.SourcePlatform:
		if ref == "" {
			ref = key
		}
		if !builtinSameValue(value, builtinLookup(n, contract.SourceType(source), ref)) {
			return reject(btxRefValueDiffers, "source", source, "ref", ref)
		}
	case contract.SourcePriorTask:
		s := value.String()
		if !slices.ContainsFunc(entities.Entities, func(e abi.Entity) bool {
			return e.ID == s && (ref == "" || e.Type == ref || e.Type+":"+e.ID == ref)
		}) {
			return reject(btxPriorMissing)
		}
	}
	return builtinSucceeded(c.text(btxOutputOK, "key", key), abi.EffectOutputWrite, abi.OutputWrite{Key: key, OutputValue: abi.OutputValue{
		Value: []byte(value.Raw), SourceType: source, SourceRef: c.arg("sourceRef"), SourcePath: path,
	}})
}

// builtinEvidenceAt reads a path of an evidence item: in the raw payload first,
// then in its extracts, where the first segment names the extract
// (evidence.<key>.<path> style). Paths are in dot notation (data.list.0.id);
// "data.list[0].id" is accepted too.
func builtinEvidenceAt(it abi.EvidenceItem, path string) gjson.Result {
	path = strings.NewReplacer("[", ".", "]", "").Replace(path)
	if len(it.Payload) > 0 {
		if r := contract.GetDot(it.Payload, path); r.Exists() {
			return r
		}
	}
	key, rest, _ := strings.Cut(path, ".")
	if raw, ok := it.Extracts[key]; ok {
		return contract.GetDot(raw, rest)
	}
	return gjson.Result{}
}

// builtinFromUser is §5.3's USER match for an output: the key is an expected field
// of the follow-up just answered, or a recent user message contains the
// value (normalised, at least 2 characters).
func builtinFromUser(value gjson.Result, key string, conv abi.ConversationView, fu abi.FollowUpView) bool {
	if fu.Current != nil && slices.Contains(fu.Current.ExpectedFields, key) {
		return true
	}
	v := builtinNormalize(value.String())
	if utf8.RuneCountInString(v) < 2 {
		return false
	}
	msgs := conv.UserMessages
	if fu.Current != nil && fu.Current.Answer != "" {
		msgs = append(slices.Clone(msgs), fu.Current.Answer)
	}
	for _, m := range msgs {
		if strings.Contains(builtinNormalize(m), v) {
			return true
		}
	}
	return false
}

// builtinLookup reads ref from the node data a source type names: inputs then
// outputs for NODE_OUTPUT, shared, session, platform.
func builtinLookup(n *abi.NodeView, source contract.SourceType, ref string) gjson.Result {
	switch source {
	case contract.SourceNodeOutput:
		if raw, ok := n.Inputs[ref]; ok {
			return gjson.ParseBytes(raw)
		}
		if o, ok := n.Outputs[ref]; ok {
			return gjson.ParseBytes(o.Value)
		}
	case contract.SourceShared:
		if raw, ok := n.Shared[ref]; ok {
			return gjson.ParseBytes(raw)
		}
	case contract.SourceSession:
		if raw, ok := n.Session[ref]; ok {
			return gjson.ParseBytes(raw)
		}
	case contract.SourcePlatform:
		if raw, ok := n.Platform[ref]; ok {
			return gjson.ParseBytes(raw)
		}
	}
	return gjson.Result{}
}

// builtinStateSet decides builtin_state_set(key, value): a reserved scratch key is
// refused (STATE_KEY_RESERVED).
func builtinStateSet(c *builtinCall) builtinDecision {
	n, d := c.node()
	if d != nil {
		return *d
	}
	key := c.arg("key")
	if slices.Contains(n.ReservedKeys, key) {
		return builtinRejected(abi.StateKeyReserved, abi.StateKeyReserved.Reason(c.l, "key", key), abi.NextChangeStrategy.Text(c.l))
	}
	value := c.args.Get("value")
	return builtinSucceeded(c.text(btxStateOK, "key", key), abi.EffectStateSet, abi.StateSet{Key: key, Value: []byte(value.Raw)})
}

// Paging of builtin_evidence_get, in bytes of the raw payload.
const (
	builtinPageDefault = 8192
	builtinPageMin     = 256
	builtinPageMax     = 32768
)

// builtinEvidenceGet decides builtin_evidence_get(evidenceId, page?, pageSize?)
// after the guest has checked that the id is not empty.
//
// Paging contract: the raw payload held in state.evidence is cut into
// pages of pageSize bytes (default 8192, clamped to 256…32768), each page
// ending on a UTF-8 character boundary; page is 1-based (default 1). When
// the payload fits one page and was not cut for the model's view, data
// carries it as JSON under "payload"; otherwise data carries the page's
// text under "chunk", and "nextPage" names the next page while there is
// one. "truncated" repeats the evidence's own flag, "bytes" is the payload
// size in the view and "size" the full size the tool returned.
func builtinEvidenceGet(c *builtinCall) builtinDecision {
	var ev abi.EvidenceView
	if d := c.views(abi.CapStateEvidence, &ev); d != nil {
		return *d
	}
	id := c.arg("evidenceId")
	i := slices.IndexFunc(ev.Items, func(it abi.EvidenceItem) bool { return it.ID == id })
	if i < 0 {
		return builtinRejected(abi.EvidenceNotFound, abi.EvidenceNotFound.Reason(c.l, "evidence", id), abi.NextCiteEvidence.Text(c.l))
	}
	it := ev.Items[i]
	size := int(c.args.Get("pageSize").Int())
	if size == 0 {
		size = builtinPageDefault
	}
	size = min(max(size, builtinPageMin), builtinPageMax)
	pages := builtinPageBounds(it.Payload, size)
	page := 1
	if p := c.args.Get("page"); p.Exists() {
		page = int(p.Int())
	}
	if page < 1 || page > len(pages) {
		return builtinRejected(abi.ArgRejected, abi.ArgRejected.Reason(c.l, "tool", c.tool, "detail",
			c.text(btxPageRange, "pages", strconv.Itoa(len(pages)))), abi.NextFixArgs.Text(c.l))
	}
	data := builtinEvidencePage{EvidenceID: it.ID, Tool: it.Tool, Page: page, Pages: len(pages), Bytes: len(it.Payload),
		Size: it.Size, Truncated: it.Truncated}
	if len(pages) == 1 && !it.Truncated && gjson.ValidBytes(it.Payload) && len(it.Payload) > 0 {
		data.Payload = it.Payload
	} else {
		b := pages[page-1]
		data.Chunk = string(it.Payload[b[0]:b[1]])
		if page < len(pages) {
			data.NextPage = page + 1
		}
	}
	d := builtinSucceeded(c.text(btxEvidencePage, "evidence", it.ID, "page", strconv.Itoa(page), "pages", strconv.Itoa(len(pages))), "", nil)
	d.Data = data
	return d
}

// builtinEvidencePage is the data of builtin_evidence_get.
type builtinEvidencePage struct {
	EvidenceID string          `json:"evidenceId"`
	Tool       string          `json:"tool,omitempty"`
	Page       int             `json:"page"`
	Pages      int             `json:"pages"`
	Bytes      int             `json:"bytes"`
	Size       int             `json:"size,omitempty"`
	Truncated  bool            `json:"truncated,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	Chunk      string          `json:"chunk,omitempty"`
	NextPage   int             `json:"nextPage,omitempty"`
}

// builtinPageBounds cuts b into pages of at most size bytes that end on UTF-8
// character boundaries; an empty payload is one empty page.
func builtinPageBounds(b []byte, size int) [][2]int {
	if len(b) == 0 {
		return [][2]int{{0, 0}}
	}
	var out [][2]int
	for start := 0; start < len(b); {
		end := min(start+size, len(b))
		for end < len(b) && end > start && !utf8.RuneStart(b[end]) {
			end--
		}
		if end == start { // a character longer than the page: take it whole
			_, w := utf8.DecodeRune(b[start:])
			end = start + w
		}
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}
