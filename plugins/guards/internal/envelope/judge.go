package envelope

import (
	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// Judge judges the request's response with its tool's success and error
// (CONTRACT_SPEC §6.1, §6.2; contract.Tool.Judge). It returns whether the
// business call succeeded and, when not, the model-facing reason of the
// TOOL_BUSINESS_FAILED observation in the request's locale.
func Judge(req Reader) (ok bool, reason string, err error) {
	t, err := Tool(req)
	if err != nil {
		return false, "", err
	}
	v := t.Judge(Response(req))
	if v.OK {
		return true, "", nil
	}
	return false, BusinessReason(Locale(req), v), nil
}

// BusinessReason is the reason of a TOOL_BUSINESS_FAILED observation:
// "业务失败 [<downstream code>]：<message>" or, without a downstream code,
// the TOOL_BUSINESS_FAILED template "业务失败：<message>". The downstream
// code goes into the reason, never into the runtime code (TOOL_OBSERVATION
// §7.1). An empty response reads "返回为空" ("the response is empty").
func BusinessReason(l abi.Locale, v contract.Verdict) string {
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
