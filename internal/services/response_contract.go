package services

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/tidwall/gjson"
)

// The response services judge a business tool's response with the skill
// contract (CONTRACT_SPEC §6.1, §6.2) for the ResponseContract guard, and
// share with the ledger and evidence services the parsing of the request's
// tool contract.

func init() {
	Register("response.judge", responseJudge)
}

// responseJudge: in is ignored. It judges the request's response with the
// contract's success and error and answers "1" when the business call
// succeeded, else "0" followed by the model-facing reason in the request's
// locale: "业务失败 [<downstream code>]：<message>" or, without a downstream
// code, the TOOL_BUSINESS_FAILED template "业务失败：<message>". An empty
// response reads "返回为空" ("the response is empty") as its message.
func responseJudge(req, _ []byte) ([]byte, error) {
	t, err := requestToolContract(req)
	if err != nil {
		return nil, err
	}
	v := t.Judge(responseBytes(req))
	if v.OK {
		return []byte("1"), nil
	}
	return append([]byte("0"), businessReason(requestLocale(req), v)...), nil
}

// businessReason is the reason of a TOOL_BUSINESS_FAILED observation. The
// downstream code goes into the reason, never into the runtime code
// (TOOL_OBSERVATION §7.1).
func businessReason(l abi.Locale, v contract.Verdict) string {
	if v.Message == "" {
		v.Message = "返回为空"
		if l == abi.LocaleEN {
			v.Message = "the response is empty"
		}
	}
	if v.Code == "" {
		return abi.ToolBusinessFailed.Reason(l, "detail", v.Message)
	}
	if l == abi.LocaleEN {
		return "business failure [" + v.Code + "]: " + v.Message
	}
	return "业务失败 [" + v.Code + "]：" + v.Message
}

func requestLocale(req []byte) abi.Locale {
	return abi.ParseLocale(gjson.GetBytes(req, abi.FieldLocale).String())
}

// responseBytes is the raw response of an after-phase request; nil when
// there is none.
func responseBytes(req []byte) []byte {
	r := gjson.GetBytes(req, abi.FieldResponse)
	if !r.Exists() {
		return nil
	}
	return []byte(r.Raw)
}

// boundArgs is the arguments after binding, or the model's when no guard
// bound any; "null" when neither is present.
func boundArgs(req []byte) gjson.Result {
	if b := gjson.GetBytes(req, abi.FieldBound); b.Exists() {
		return b
	}
	return gjson.GetBytes(req, abi.FieldArgs)
}

// argsDigest is the digest of the bound arguments, the same value the
// digest service gives for the "bound" path: every guard and the approval
// flow compare arguments by it.
func argsDigest(req []byte) string {
	sum := sha256.Sum256(Canonical(boundArgs(req)))
	return hex.EncodeToString(sum[:])
}

// toolCache memoises parsed tool contracts: a skill's contract is the same
// for every call of the tool, and parsing it is most of a service's cost.
// Parsing is a pure function of its key, so the cache keeps the services
// deterministic.
var toolCache = struct {
	sync.Mutex
	m map[string]*contract.Tool
}{m: map[string]*contract.Tool{}}

const toolCacheMax = 512

// requestToolContract parses the request's contract (the skill's
// tools.<name> object) with the contract package. A request without a
// contract gets the contract of an unconfigured tool: NONE, no success, no
// extracts (CONTRACT_SPEC §1.3). It is parsed on its own
// (contract.ParseTool): verify and fallback name other tools of the skill,
// which the request does not carry.
func requestToolContract(req []byte) (*contract.Tool, error) {
	name := gjson.GetBytes(req, abi.FieldTool).String()
	raw := gjson.GetBytes(req, abi.FieldContract)
	if !raw.IsObject() {
		return &contract.Tool{Name: name, SideEffect: contract.SideEffectNone}, nil
	}
	key := name + "\x00" + raw.Raw
	toolCache.Lock()
	t, ok := toolCache.m[key]
	toolCache.Unlock()
	if ok {
		return t, nil
	}
	parseName := name
	if parseName == "" {
		parseName = "tool"
	}
	t, err := contract.ParseTool(parseName, []byte(raw.Raw))
	if err != nil {
		return nil, fmt.Errorf("services: contract of tool %q: %w", name, err)
	}
	toolCache.Lock()
	if len(toolCache.m) >= toolCacheMax {
		clear(toolCache.m)
	}
	toolCache.m[key] = t
	toolCache.Unlock()
	return t, nil
}
