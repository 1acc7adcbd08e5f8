package node

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
	"github.com/tidwall/gjson"
)

// stateSet decides builtin_state_set(key, value): a reserved scratch key is
// refused (STATE_KEY_RESERVED).
func stateSet(c *rules.Call) rules.Decision {
	n, d := c.Node("{nodeId,reservedKeys}")
	if d != nil {
		return *d
	}
	key := c.Arg("key")
	if slices.Contains(n.ReservedKeys, key) {
		return rules.Rejected(abi.StateKeyReserved, abi.StateKeyReserved.Reason(c.L, "key", key), abi.NextChangeStrategy.Text(c.L))
	}
	value := c.ArgValue("value")
	return rules.Succeeded(c.Text(txStateOK, "key", key), abi.EffectStateSet, abi.StateSet{Key: key, Value: []byte(value.Raw)})
}

// Paging of builtin_evidence_get, in bytes of the raw payload.
const (
	pageDefault = 8192
	pageMin     = 256
	pageMax     = 32768
)

// evidenceGet decides builtin_evidence_get(evidenceId, page?, pageSize?)
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
func evidenceGet(c *rules.Call) rules.Decision {
	var ev abi.EvidenceView
	if d := c.Views(abi.CapStateEvidence, &ev); d != nil {
		return *d
	}
	id := c.Arg("evidenceId")
	i := slices.IndexFunc(ev.Items, func(it abi.EvidenceItem) bool { return it.ID == id })
	if i < 0 {
		return rules.Rejected(abi.EvidenceNotFound, abi.EvidenceNotFound.Reason(c.L, "evidence", id), abi.NextCiteEvidence.Text(c.L))
	}
	it := ev.Items[i]
	size := int(c.ArgValue("pageSize").Int())
	if size == 0 {
		size = pageDefault
	}
	size = min(max(size, pageMin), pageMax)
	pages := pageBounds(it.Payload, size)
	page := 1
	if p := c.ArgValue("page"); p.Exists() {
		page = int(p.Int())
	}
	if page < 1 || page > len(pages) {
		return rules.Rejected(abi.ArgRejected, abi.ArgRejected.Reason(c.L, "tool", c.Tool, "detail",
			c.Text(txPageRange, "pages", strconv.Itoa(len(pages)))), abi.NextFixArgs.Text(c.L))
	}
	data := evidencePage{EvidenceID: it.ID, Tool: it.Tool, Page: page, Pages: len(pages), Bytes: len(it.Payload),
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
	d := rules.Succeeded(c.Text(txEvidencePage, "evidence", it.ID, "page", strconv.Itoa(page), "pages", strconv.Itoa(len(pages))), "", nil)
	d.Data = data
	return d
}

// evidencePage is the data of builtin_evidence_get.
type evidencePage struct {
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

// pageBounds cuts b into pages of at most size bytes that end on UTF-8
// character boundaries; an empty payload is one empty page.
func pageBounds(b []byte, size int) [][2]int {
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
