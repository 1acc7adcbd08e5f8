package loop

import (
	"fmt"

	"github.com/agentwarden/warden/abi"
)

type textID int

const (
	txtMaxRounds textID = iota
	txtNoProgress
	txtSkipped
	txtAnswer
	txtAnswerFields
	txtRejected
	txtCancelled
)

// texts are the loop's own model- and user-facing texts: zh-CN, en.
var texts = map[textID][2]string{
	txtMaxRounds:    {"节点已达到总轮次上限（%s 轮）", "the node reached its limit of %s rounds"},
	txtNoProgress:   {"节点连续 %s 轮没有进展", "the node made no progress for %s turns in a row"},
	txtSkipped:      {"未执行：同一轮中前面的调用没有成功，本轮其余调用已跳过。请根据前面调用的返回重新决定。", "not run: an earlier call of this turn did not succeed, so the rest of the turn was skipped. Decide again from that call's result."},
	txtAnswer:       {"用户回答了追问「%s」：%s", "the user answered the question \"%s\": %s"},
	txtAnswerFields: {"用户回答了追问「%s」（参数：%s）：%s", "the user answered the question \"%s\" (parameters: %s): %s"},
	txtRejected:     {"用户拒绝了确认，未执行写操作 %s。%s", "the user refused the confirmation; write %s was not done. %s"},
	txtCancelled:    {"用户取消了任务，未执行写操作 %s。%s", "the user cancelled the task; write %s was not done. %s"},
}

func (r *Runner) text(id textID, args ...any) string {
	t := texts[id][0]
	if r.cfg.Locale == abi.LocaleEN {
		t = texts[id][1]
	}
	if len(args) == 0 {
		return t
	}
	return fmt.Sprintf(t, args...)
}
