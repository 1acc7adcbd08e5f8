package node

import "github.com/agentwarden/warden/plugins/builtins/internal/rules"

// Texts of the node builtins that no error code or hint carries.
var (
	txOutputOK             = rules.Text{"已写入产出 {key}", "output {key} was written"}
	txStateOK              = rules.Text{"已写入便签 {key}", "scratch key {key} was written"}
	txEvidencePage         = rules.Text{"证据 {evidence} 的原始报文，第 {page}/{pages} 页", "raw payload of evidence {evidence}, page {page} of {pages}"}
	txSourceUnknown        = rules.Text{"产出 {key} 的来源类型 {source} 不存在", "source type {source} of output {key} does not exist"}
	txSourceModel          = rules.Text{"产出 {key} 的来源类型不能是 MODEL", "the source type of output {key} may not be MODEL"}
	txSourceNotAccepted    = rules.Text{"产出 {key} 不接受来源类型 {source}", "output {key} does not accept source type {source}"}
	txSourceRefMissing     = rules.Text{"产出 {key} 缺少 sourceRef", "sourceRef of output {key} is missing"}
	txEvidenceMissing      = rules.Text{"产出 {key} 引用的证据 {ref} 不存在", "evidence {ref} cited by output {key} does not exist"}
	txEvidenceNotOK        = rules.Text{"产出 {key} 引用的证据 {ref} 不是业务成功的调用结果", "evidence {ref} cited by output {key} is not a successful call"}
	txEvidencePathMissing  = rules.Text{"证据 {ref} 中没有路径 {path}", "evidence {ref} has no path {path}"}
	txEvidenceValueDiffers = rules.Text{"产出 {key} 的值与证据 {ref} 中 {path} 处的值不一致", "the value of output {key} differs from the value at {path} in evidence {ref}"}
	txEvidenceNoValue      = rules.Text{"产出 {key} 的值不在证据 {ref} 的抽取内容中", "the value of output {key} is not among the extracted values of evidence {ref}"}
	txNoConstant           = rules.Text{"产出 {key} 没有配置 constant，不能用来源类型 CONTRACT", "output {key} has no constant, so source type CONTRACT cannot be used"}
	txUserValueMissing     = rules.Text{"产出 {key} 的值不在用户最近的消息中", "the value of output {key} is not in the user's recent messages"}
	txRefValueDiffers      = rules.Text{"产出 {key} 的值与 {source} 中 {ref} 的值不一致", "the value of output {key} differs from {ref} in {source}"}
	txPriorMissing         = rules.Text{"产出 {key} 的值不是前情中任何实体的 id", "the value of output {key} is not the id of any prior entity"}
	txValueMissing         = rules.Text{"产出 {key} 缺少 value", "value of output {key} is missing"}
	txAnyKey               = rules.Text{"任意非平台字段名", "any key that is not a platform field name"}
	txPageRange            = rules.Text{"page 超出范围（共 {pages} 页）", "page is out of range ({pages} pages)"}
)
