package node

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/plugins/builtins/internal/rules"
	"github.com/tidwall/gjson"
)

// outputSet decides builtin_output_set(key, value, sourceType, sourceRef,
// sourcePath?) (CONTRACT_SPEC §8, TOOL_OBSERVATION §7.3 and §9 scenario 10).
// Every rejection names the failing item; its next step lists the keys and
// source types that may be written, and for an output that is not required
// adds that it may be left out.
func outputSet(c *rules.Call) rules.Decision {
	n, d := c.Node("")
	if d != nil {
		return *d
	}
	ct, d := c.Contract(n)
	if d != nil {
		return *d
	}
	var (
		ev       abi.EvidenceView
		conv     abi.ConversationView
		fu       abi.FollowUpView
		entities abi.EntitiesView
	)
	if d := c.Views(abi.CapStateEvidence, &ev, abi.CapStateConversation, &conv, abi.CapStateFollowUp, &fu, abi.CapStateEntities, &entities); d != nil {
		return *d
	}
	key := c.Arg("key")
	out := ct.Outputs[key]
	keys := c.Text(txAnyKey)
	if len(ct.Outputs) > 0 {
		keys = c.List(ct.OutputNames())
	}
	sources := acceptedSources(ct, out)
	// The next step is filled only for a refusal: filling texts is costly
	// inside the guest.
	next := func() string {
		n := abi.NextOutputSet.Text(c.L, "keys", keys, "sources", c.List(sources))
		if (out != nil && !out.Required) || len(ct.Outputs) == 0 {
			n = c.Clauses(n, abi.NextOptionalOutput.Text(c.L))
		}
		return n
	}
	switch {
	case key == "":
		return rules.Rejected(abi.OutputPathInvalid, abi.OutputPathInvalid.Reason(c.L), next())
	case contract.IsPlatformField(key) || slices.Contains(contract.HiddenPlatformFields, key):
		return rules.Rejected(abi.PlatformFieldForbidden, abi.PlatformFieldForbidden.Reason(c.L, "key", key), next())
	case out == nil && len(ct.Outputs) > 0:
		return rules.Rejected(abi.OutputWriteForbidden, abi.OutputWriteForbidden.Reason(c.L, "key", key), next())
	}
	reject := func(t rules.Text, kv ...string) rules.Decision {
		detail := c.Text(t, append([]string{"key", key}, kv...)...)
		return rules.Rejected(abi.SourceReject, abi.SourceReject.Reason(c.L, "detail", detail), next())
	}
	value := c.ArgValue("value")
	source, ref, path := c.Arg("sourceType"), c.Arg("sourceRef"), c.Arg("sourcePath")
	switch {
	case !value.Exists():
		return reject(txValueMissing)
	case source == string(contract.SourceModel):
		return reject(txSourceModel)
	case !slices.Contains(rules.AllSources, contract.SourceType(source)):
		return reject(txSourceUnknown, "source", source)
	case !slices.Contains(sources, source):
		return reject(txSourceNotAccepted, "source", source)
	}
	switch contract.SourceType(source) {
	case contract.SourceEvidence:
		if t, kv, bad := evidenceHolds(ev, value, ref, path); bad {
			return reject(t, kv...)
		}
	case contract.SourceContract:
		if out == nil || out.Constant == nil {
			return reject(txNoConstant)
		}
		if !rules.SameValue(value, gjson.ParseBytes(out.Constant)) {
			return reject(rules.ConstantDiffers)
		}
	case contract.SourceUser:
		if !fromUser(value, key, conv, fu) {
			return reject(txUserValueMissing)
		}
	case contract.SourceNodeOutput, contract.SourceShared, contract.SourceSession, contract.SourcePlatform:
		if ref == "" {
			ref = key
		}
		if !rules.SameValue(value, lookup(n, contract.SourceType(source), ref)) {
			return reject(txRefValueDiffers, "source", source, "ref", ref)
		}
	case contract.SourcePriorTask:
		s := value.String()
		if !slices.ContainsFunc(entities.Entities, func(e abi.Entity) bool {
			return e.ID == s && (ref == "" || e.Type == ref || e.Type+":"+e.ID == ref)
		}) {
			return reject(txPriorMissing)
		}
	}
	return rules.Succeeded(c.Text(txOutputOK, "key", key), abi.EffectOutputWrite, abi.OutputWrite{Key: key, OutputValue: abi.OutputValue{
		Value: []byte(value.Raw), SourceType: source, SourceRef: c.Arg("sourceRef"), SourcePath: path,
	}})
}

// acceptedSources are the source types a write of out may name; with no
// such output declared (a refusal follows), those of every declared one.
func acceptedSources(ct *contract.Contract, out *contract.Output) []string {
	if out != nil || len(ct.Outputs) == 0 {
		return rules.AllowedSources(out)
	}
	var sources []string
	for _, k := range ct.OutputNames() {
		for _, s := range rules.AllowedSources(ct.Outputs[k]) {
			if !slices.Contains(sources, s) {
				sources = append(sources, s)
			}
		}
	}
	return sources
}

// evidenceHolds checks a value sourced from evidence item ref (at path,
// when given): when it does not, the refusal's text and its values.
func evidenceHolds(ev abi.EvidenceView, value gjson.Result, ref, path string) (t rules.Text, kv []string, bad bool) {
	if ref == "" {
		return txSourceRefMissing, nil, true
	}
	i := slices.IndexFunc(ev.Items, func(it abi.EvidenceItem) bool { return it.ID == ref })
	if i < 0 {
		return txEvidenceMissing, []string{"ref", ref}, true
	}
	it := ev.Items[i]
	if it.Status != abi.OutcomeSuccess || !it.BusinessOK {
		return txEvidenceNotOK, []string{"ref", ref}, true
	}
	if path == "" {
		if !slices.Contains(it.Values, value.String()) && !rules.SameValue(value, gjson.ParseBytes(it.Payload)) {
			return txEvidenceNoValue, []string{"ref", ref}, true
		}
		return rules.Text{}, nil, false
	}
	at := evidenceAt(it, path)
	if !at.Exists() {
		return txEvidencePathMissing, []string{"ref", ref, "path", path}, true
	}
	if !rules.SameValue(value, at) {
		return txEvidenceValueDiffers, []string{"ref", ref, "path", path}, true
	}
	return rules.Text{}, nil, false
}

// evidenceAt reads a path of an evidence item: in the raw payload first,
// then in its extracts, where the first segment names the extract
// (evidence.<key>.<path> style). Paths are in dot notation (data.list.0.id);
// "data.list[0].id" is accepted too.
func evidenceAt(it abi.EvidenceItem, path string) gjson.Result {
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

// fromUser is §5.3's USER match for an output: the key is an expected field
// of the follow-up just answered, or a recent user message contains the
// value (normalised, at least 2 characters).
func fromUser(value gjson.Result, key string, conv abi.ConversationView, fu abi.FollowUpView) bool {
	if fu.Current != nil && slices.Contains(fu.Current.ExpectedFields, key) {
		return true
	}
	v := rules.Normalize(value.String())
	if utf8.RuneCountInString(v) < 2 {
		return false
	}
	msgs := conv.UserMessages
	if fu.Current != nil && fu.Current.Answer != "" {
		msgs = append(slices.Clone(msgs), fu.Current.Answer)
	}
	for _, m := range msgs {
		if strings.Contains(rules.Normalize(m), v) {
			return true
		}
	}
	return false
}

// lookup reads ref from the node data a source type names: inputs then
// outputs for NODE_OUTPUT, shared, session, platform.
func lookup(n *abi.NodeView, source contract.SourceType, ref string) gjson.Result {
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
