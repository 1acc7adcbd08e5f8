package abi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Violation is a plugin breaking the result contract. The host turns it into
// an observation with Code (PLUGIN_CONTRACT_VIOLATION or
// PLUGIN_OUTPUT_TOO_LARGE); Kind says which rule was broken.
type Violation struct {
	Code Code
	Kind ViolationKind
	// Detail adds specifics (the offending code, effect kind, …).
	Detail string
}

// ViolationKind names one rule of the result contract.
type ViolationKind string

// The rules the Recorder enforces.
const (
	ViolationNoResult         ViolationKind = "no_result"
	ViolationSecondResult     ViolationKind = "second_result"
	ViolationMissingCode      ViolationKind = "missing_code"
	ViolationUnknownCode      ViolationKind = "unknown_code"
	ViolationReservedCode     ViolationKind = "reserved_code"
	ViolationMissingReason    ViolationKind = "missing_reason"
	ViolationMissingNext      ViolationKind = "missing_next"
	ViolationPassNotAllowed   ViolationKind = "pass_not_allowed"
	ViolationBadData          ViolationKind = "bad_data"
	ViolationBadArgs          ViolationKind = "bad_args"
	ViolationBadFacts         ViolationKind = "bad_facts"
	ViolationUnknownEffect    ViolationKind = "unknown_effect"
	ViolationEffectNotGranted ViolationKind = "effect_not_granted"
	ViolationCodeOutcome      ViolationKind = "code_outcome"
	ViolationOutputTooLarge   ViolationKind = "output_too_large"
	ViolationBadPointer       ViolationKind = "bad_pointer"
	ViolationHostRefused      ViolationKind = "host_refused"
)

var violationTexts = map[ViolationKind][2]string{
	ViolationNoResult:         {"调用结束时没有给出结果", "the call ended without a result"},
	ViolationSecondResult:     {"一次调用给出了第二个结果", "a second result in one call"},
	ViolationMissingCode:      {"非成功结果缺少错误码", "a non-success result without an error code"},
	ViolationUnknownCode:      {"非成功结果的错误码未登记", "a non-success result with an unregistered error code"},
	ViolationReservedCode:     {"非成功结果使用了宿主保留的错误码", "a non-success result with an error code only the host may report"},
	ViolationMissingReason:    {"非成功结果缺少原因", "a non-success result without a reason"},
	ViolationMissingNext:      {"非成功结果缺少下一步", "a non-success result without a next step"},
	ViolationPassNotAllowed:   {"内置工具不能放行，必须给出结果", "a builtin cannot pass; it must give a result"},
	ViolationBadData:          {"结果数据不是合法 JSON", "result data is not valid JSON"},
	ViolationBadArgs:          {"改写后的参数不是 JSON 对象", "rewritten arguments are not a JSON object"},
	ViolationBadFacts:         {"来源记录不是合法的列表", "provenance facts are not a valid list"},
	ViolationUnknownEffect:    {"请求了未登记的效果", "an unregistered effect kind"},
	ViolationEffectNotGranted: {"请求了未被授予的效果", "an effect the plugin was not granted"},
	ViolationCodeOutcome:      {"自声明错误码的结果类别与声明不符", "a declared error code with another outcome than declared"},
	ViolationOutputTooLarge:   {"输出超过上限", "output over the limit"},
	ViolationBadPointer:       {"传给宿主的内存地址越界", "a pointer passed to the host is out of bounds"},
	ViolationHostRefused:      {"宿主函数拒绝了输入", "a host function refused its input"},
}

// Violate records a violation the host detected itself (e.g. a bad pointer).
func (r *Recorder) Violate(kind ViolationKind, detail string) {
	r.fail(PluginContractViolation, kind, detail)
}

// Text describes the violation in the locale.
func (v *Violation) Text(l Locale) string {
	t := violationTexts[v.Kind]
	s := t[0]
	sep := "："
	if l == LocaleEN {
		s, sep = t[1], ": "
	}
	if v.Detail != "" {
		s += sep + v.Detail
	}
	return s
}

func (v *Violation) Error() string { return "abi: plugin contract violation: " + v.Text(LocaleEN) }

// Recorder collects what one plugin call reports and enforces the result
// contract: exactly one result, through a factory, with a registered code, a
// reason and a next step for every non-success; pass only for guards; only
// granted effects; output within MaxOutput bytes. A registered code is any
// runtime code but the host's own, or one the plugin declared itself. The first violation sticks.
// The host and the native runner of abi/guest share it, so a plugin behaves
// the same in-process and in wasm.
type Recorder struct {
	role      Role
	manifest  *Manifest
	grant     []Capability
	maxOutput int

	used      int
	verdict   Verdict
	done      bool
	violation *Violation
}

// NewRecorder returns a recorder for one call of a plugin with manifest m,
// granted what m asks for (an in-process plugin, whose manifest is the
// program's own). maxOutput bounds the sum of all bytes reported (0 means
// no bound).
func NewRecorder(m *Manifest, maxOutput int) *Recorder {
	return NewGrantedRecorder(m, m.Capabilities, maxOutput)
}

// NewGrantedRecorder is NewRecorder for a plugin granted exactly grant by
// whoever loaded it: an effect whose capability grant lacks is a
// violation, whatever the manifest asks for.
func NewGrantedRecorder(m *Manifest, grant []Capability, maxOutput int) *Recorder {
	return &Recorder{role: m.Role, manifest: m, grant: grant, maxOutput: maxOutput}
}

// Reset prepares r for another call, keeping its manifest, grant and limit.
func (r *Recorder) Reset() {
	*r = Recorder{role: r.role, manifest: r.manifest, grant: r.grant, maxOutput: r.maxOutput}
}

func (r *Recorder) fail(code Code, kind ViolationKind, detail string) {
	if r.violation == nil {
		r.violation = &Violation{Code: code, Kind: kind, Detail: detail}
	}
}

// Charge accounts n more output bytes before they are read. It returns false
// (and records PLUGIN_OUTPUT_TOO_LARGE) when the limit would be passed; the
// host then does not read the bytes at all.
func (r *Recorder) Charge(n int) bool {
	if r.violation != nil {
		return false
	}
	if n < 0 || r.maxOutput > 0 && r.used+n > r.maxOutput {
		r.fail(PluginOutputTooLarge, ViolationOutputTooLarge, fmt.Sprintf("%d", r.maxOutput))
		return false
	}
	r.used += n
	return true
}

func (r *Recorder) claim() bool {
	if r.violation != nil {
		return false
	}
	if r.done {
		r.fail(PluginContractViolation, ViolationSecondResult, "")
		return false
	}
	r.done = true
	return true
}

// badJSON says why data a plugin reported cannot be taken: not JSON, or an
// object with a key twice, which two readers (gjson takes the first,
// encoding/json the last) would read as two documents.
func badJSON(data []byte) (string, bool) {
	valid, dup, _ := scanJSON(data)
	switch {
	case !valid:
		return "", true
	case !dup:
		return "", false
	}
	return strictDetail(walkStrict(data, nil)), true
}

// strictDetail is the detail of a strictness error (which key, where); a
// document that is not JSON or not of the type has none, as before.
func strictDetail(err error) string {
	if errors.Is(err, ErrDuplicateKey) || errors.Is(err, ErrKeyCase) || errors.Is(err, ErrUnknownKey) {
		return err.Error()
	}
	return ""
}

// Success records a SUCCESS result.
func (r *Recorder) Success(message string, data []byte) {
	if !r.claim() {
		return
	}
	if len(data) > 0 {
		if detail, bad := badJSON(data); bad {
			r.fail(PluginContractViolation, ViolationBadData, detail)
			return
		}
	}
	o := Success(message, cloneRaw(data))
	r.verdict.Observation = &o
}

// Result records a non-success result (FAILED, REJECTED or DEFERRED).
func (r *Recorder) Result(outcome Outcome, code, reason, next string, data []byte) {
	if !r.claim() {
		return
	}
	if len(data) > 0 {
		if detail, bad := badJSON(data); bad {
			r.fail(PluginContractViolation, ViolationBadData, detail)
			return
		}
	}
	c, err := ParseCode(code)
	switch {
	case code == "":
		r.fail(PluginContractViolation, ViolationMissingCode, "")
		return
	case err != nil:
		// Not a runtime code: one this plugin declared, or none at all.
		spec, ok := r.manifest.Declared(code)
		if !ok {
			r.fail(PluginContractViolation, ViolationUnknownCode, code)
			return
		}
		c = PluginCode(r.manifest.Name, spec.Name)
		if outcome != spec.Outcome {
			r.fail(PluginContractViolation, ViolationCodeOutcome, fmt.Sprintf("%s %s, declared %s", c, outcome, spec.Outcome))
			return
		}
	case c.HostReserved():
		r.fail(PluginContractViolation, ViolationReservedCode, string(c))
		return
	}
	o, err := Build(outcome, c, reason, next, cloneRaw(data))
	if err != nil {
		switch {
		case errors.Is(err, ErrMissingReason):
			r.fail(PluginContractViolation, ViolationMissingReason, string(c))
		case errors.Is(err, ErrMissingNext):
			r.fail(PluginContractViolation, ViolationMissingNext, string(c))
		default:
			r.fail(PluginContractViolation, ViolationUnknownCode, err.Error())
		}
		return
	}
	r.verdict.Observation = &o
}

// Pass records a guard's pass, with optional rewritten arguments (a JSON
// object) and provenance facts (a JSON array of Fact).
func (r *Recorder) Pass(args, facts []byte) {
	if !r.claim() {
		return
	}
	if r.role != RoleGuard {
		r.fail(PluginContractViolation, ViolationPassNotAllowed, "")
		return
	}
	if len(args) > 0 {
		valid, dup, object := scanJSON(args)
		if !valid || !object {
			r.fail(PluginContractViolation, ViolationBadArgs, "")
			return
		}
		// The host checks the rewritten arguments and the tool reads them:
		// both must see the same document.
		if dup {
			r.fail(PluginContractViolation, ViolationBadArgs, strictDetail(walkStrict(args, nil)))
			return
		}
	}
	var fs []Fact
	if len(facts) > 0 {
		var err error
		if fs, err = decodeFacts(facts); err != nil {
			r.fail(PluginContractViolation, ViolationBadFacts, strictDetail(err))
			return
		}
	}
	r.verdict.Pass = true
	r.verdict.Args = cloneRaw(args)
	r.verdict.Facts = fs
}

// Effect records an effect to apply if the call is accepted.
func (r *Recorder) Effect(kind string, payload []byte) {
	if r.effectOK(kind, payload) {
		r.verdict.Effects = append(r.verdict.Effects, Effect{Kind: kind, Payload: cloneRaw(payload)})
	}
}

// effectOK reports whether an effect of kind with the JSON checked may be
// recorded: the call is not void, the kind known and granted, the JSON (if
// any) valid with no key twice; otherwise it voids the call.
func (r *Recorder) effectOK(kind string, checked []byte) bool {
	if r.violation != nil {
		return false
	}
	c, err := EffectCapability(kind)
	if err != nil {
		r.fail(PluginContractViolation, ViolationUnknownEffect, kind)
		return false
	}
	if !slices.Contains(r.grant, c) {
		r.fail(PluginContractViolation, ViolationEffectNotGranted, kind)
		return false
	}
	if len(checked) > 0 {
		if detail, bad := badJSON(checked); bad {
			if detail != "" {
				detail = kind + ": " + detail
			} else {
				detail = kind
			}
			r.fail(PluginContractViolation, ViolationBadData, detail)
			return false
		}
	}
	return true
}

// EffectSpliced records an effect whose payload the host assembled from a
// plugin's parts (the splice primitive): skeleton is the plugin's literal
// JSON with null in place of each value the host copied
// in, and is what is checked (valid JSON, no key twice); the copied values
// were checked by the host, so payload is neither scanned again nor
// copied: the recorder keeps it. Its bytes were charged by the caller.
func (r *Recorder) EffectSpliced(kind string, skeleton, payload []byte) {
	if !r.effectOK(kind, skeleton) {
		return
	}
	if len(payload) == 0 {
		payload = nil
	}
	r.verdict.Effects = append(r.verdict.Effects, Effect{Kind: kind, Payload: payload})
}

// GrowEffects makes room for n more effects (a splice's, whose number is
// known before they are recorded).
func (r *Recorder) GrowEffects(n int) {
	if n > 0 {
		r.verdict.Effects = slices.Grow(r.verdict.Effects, n)
	}
}

// Room is how many more output bytes the call may report: -1 when
// unbounded, 0 once a violation voided it.
func (r *Recorder) Room() int {
	switch {
	case r.violation != nil:
		return 0
	case r.maxOutput <= 0:
		return -1
	}
	return max(r.maxOutput-r.used, 0)
}

// DistinctJSON reports whether data is valid JSON (as json.Valid judges
// it) in which no object holds a key twice: what the recorder takes of a
// plugin's data, in one pass.
func DistinctJSON(data []byte) bool {
	valid, dup, _ := scanJSON(data)
	return valid && !dup
}

// Finish ends the call: the verdict, or the *Violation that voids it (its
// effects are dropped).
func (r *Recorder) Finish() (Verdict, error) {
	if r.violation == nil && !r.done {
		r.fail(PluginContractViolation, ViolationNoResult, "")
	}
	if r.violation != nil {
		return Verdict{}, r.violation
	}
	return r.verdict, nil
}

func cloneRaw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}
