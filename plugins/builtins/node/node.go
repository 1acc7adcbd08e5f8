// Package node is the builtin plugin of the node-data tools of
// CONTRACT_SPEC §12: builtin_output_set, builtin_state_set,
// builtin_evidence_get and builtin_session_info.
//
// It is stateless: it reads the state views its manifest is granted and
// answers with one observation plus, on success, the effect the loop
// applies (output.write, state.set). A broken rule is REJECTED with the
// spec's code and a concrete next step (TOOL_OBSERVATION §5, §7.3); missing
// runtime state is FAILED (TOOL_ERROR).
//
// Every rule is decided here, inside the plugin, from the envelope the guest
// holds: the source checks of builtin_output_set (§8, §5.3) against the
// skill contract (parsed once per contract text), the reserved scratch keys
// and the evidence paging. Swapping node.wasm changes them with no host
// rebuild.
//
// builtin_evidence_get pages the raw payload held in state.evidence by
// bytes: pageSize (default 8192, clamped to 256…32768) bytes per page, each
// page ending on a character boundary, page 1-based. A payload that fits one
// page and was not cut comes back whole as JSON in data.payload; otherwise
// data.chunk holds the page's text and data.nextPage the next page number.
package node

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/builtins/internal/args"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
)

// Tool names.
const (
	OutputSet   = "builtin_output_set"
	StateSet    = "builtin_state_set"
	EvidenceGet = "builtin_evidence_get"
	SessionInfo = "builtin_session_info"
)

// Plugin is the node-data builtin.
var Plugin = guest.Plugin{
	Manifest: abi.Manifest{
		Name: "builtin-node", Version: "1.0.0", ABI: abi.Version, Role: abi.RoleBuiltin,
		Description: "node-data builtins: output_set, state_set, evidence_get, session_info",
		Tools: []abi.ToolSpec{
			{Name: OutputSet, Description: "写一条节点产出。只能写契约声明的键；sourceType 不能是 MODEL；来源为 EVIDENCE 时 sourceRef 填证据 ID、sourcePath 填报文路径，值必须与报文中的值相等；来源为 CONTRACT 时值必须等于契约常量。非必填产出也可以不写。",
				InputSchema: []byte(`{"type":"object","properties":{` +
					`"key":{"type":"string","minLength":1,"description":"产出键"},` +
					`"value":{"description":"产出的值"},` +
					`"sourceType":{"type":"string","enum":["USER","EVIDENCE","NODE_OUTPUT","SHARED","SESSION","PRIOR_TASK","CONTRACT","PLATFORM"],"description":"值的来源类型"},` +
					`"sourceRef":{"type":"string","description":"来源引用：EVIDENCE 填证据 ID；NODE_OUTPUT/SHARED/SESSION/PLATFORM 填键名"},` +
					`"sourcePath":{"type":"string","description":"EVIDENCE 时值在报文中的路径，如 data.list.0.id"}},` +
					`"required":["key","value","sourceType","sourceRef"],"additionalProperties":false}`)},
			{Name: StateSet, Description: "写节点私有便签；不能写保留键。",
				InputSchema: []byte(`{"type":"object","properties":{` +
					`"key":{"type":"string","minLength":1,"description":"便签键"},` +
					`"value":{"description":"便签值"}},` +
					`"required":["key","value"],"additionalProperties":false}`)},
			{Name: EvidenceGet, Description: "读取证据的原始报文；报文较大时分页读取。",
				InputSchema: []byte(`{"type":"object","properties":{` +
					`"evidenceId":{"type":"string","minLength":1,"description":"证据 ID"},` +
					`"page":{"type":"integer","minimum":1,"description":"页码，从 1 开始"},` +
					`"pageSize":{"type":"integer","minimum":256,"maximum":32768,"description":"每页字节数，默认 8192"}},` +
					`"required":["evidenceId"],"additionalProperties":false}`)},
			{Name: SessionInfo, Description: "返回会话 ID、节点 ID、节点状态。",
				InputSchema: []byte(`{"type":"object","properties":{},"additionalProperties":false}`)},
		},
		Capabilities: []abi.Capability{
			abi.CapStateNode, abi.CapStateEvidence, abi.CapStateConversation, abi.CapStateFollowUp,
			abi.CapStateEntities, abi.CapEffectOutput, abi.CapEffectState,
		},
	},
	Handle: handle,
}

func handle(g *guest.Call) {
	if args.Invalid(g) {
		return
	}
	c := rules.New(g)
	switch c.Tool {
	case OutputSet:
		rules.Report(g, outputSet(c))
	case StateSet:
		if rules.ArgMissing(c, "key") {
			return
		}
		if !c.ArgValue("value").Exists() {
			rules.RejectArg(c, "value")
			return
		}
		rules.Report(g, stateSet(c))
	case EvidenceGet:
		if rules.Blank(c.ArgValue("evidenceId")) {
			g.Rejected(abi.EvidencePathInvalid, abi.EvidencePathInvalid.Reason(c.L), abi.NextCiteEvidence.Text(c.L))
			return
		}
		rules.Report(g, evidenceGet(c))
	case SessionInfo:
		sessionInfo(g)
	default:
		g.Rejected(abi.CatalogDenied, abi.CatalogDenied.Reason(c.L, "tool", c.Tool), abi.NextCatalog.Text(c.L))
	}
}

// sessionInfo reports the session, task and node of the call; one
// multipath read builds the data object in the host.
func sessionInfo(c *guest.Call) {
	l := c.Locale()
	info := c.Get(guest.StatePath(abi.CapStateNode, "{sessionId,taskId,nodeId,status,skillKey}"))
	if !c.Has(guest.StatePath(abi.CapStateNode, "nodeId")) {
		detail := "缺少运行态 state.node"
		if l == abi.LocaleEN {
			detail = "runtime state state.node is missing"
		}
		c.Failed(abi.ToolError, abi.ToolError.Reason(l, "tool", c.Tool(), "detail", detail), abi.NextFail.Text(l), nil)
		return
	}
	t := "会话 {session}，节点 {node}，状态 {status}"
	if l == abi.LocaleEN {
		t = "session {session}, node {node}, status {status}"
	}
	c.Success(abi.Fill(t, "session", info.Get("sessionId").String(), "node", info.Get("nodeId").String(),
		"status", info.Get("status").String()), []byte(info.Raw))
}
