package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/agentwarden/warden/abi"
)

// Parse parses and validates one skill_contract. It returns the contract and
// the advisory warnings, or, when any load rule fails, a nil contract and a
// *ValidationError listing every problem of the skill (not just the first).
func Parse(skillKey string, src []byte) (*Contract, []Warning, error) {
	p := &parser{key: skillKey}
	c := p.contract(src)
	if len(p.errs) > 0 {
		return nil, p.warns, &ValidationError{SkillKey: skillKey, Problems: p.errs}
	}
	return c, p.warns, nil
}

type parser struct {
	key   string
	errs  []*LoadError
	warns []Warning
	// single parses one tool's contract on its own: references to other
	// tools of the skill (verify.tool, fallback) cannot be checked.
	single bool
}

// ParseTool parses one tool's contract (a skill's tools.<name> object) on
// its own, as a guard receives it. Every rule that concerns the tool alone
// applies; the ones that look up another tool of the skill (verify.tool and
// fallback must name a key of tools) cannot, and are the skill load's job.
func ParseTool(name string, raw []byte) (*Tool, error) {
	key, _ := json.Marshal(name)
	src := make([]byte, 0, len(raw)+len(key)+16)
	src = append(src, `{"tools":{`...)
	src = append(src, key...)
	src = append(src, ':')
	src = append(src, raw...)
	src = append(src, `}}`...)
	p := &parser{key: "tool " + name, single: true}
	c := p.contract(src)
	if len(p.errs) > 0 {
		return nil, &ValidationError{SkillKey: p.key, Problems: p.errs}
	}
	return c.Tools[name], nil
}

func (p *parser) fail(rule Rule, path, format string, args ...any) {
	p.errs = append(p.errs, &LoadError{SkillKey: p.key, Path: path, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

func (p *parser) warn(rule Rule, path, format string, args ...any) {
	p.warns = append(p.warns, Warning{SkillKey: p.key, Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func join(base, key string) string {
	if key == "" {
		key = `""`
	}
	if base == "" {
		return key
	}
	return base + "." + key
}

func (p *parser) contract(src []byte) *Contract {
	if len(bytes.TrimSpace(src)) == 0 {
		p.fail(RuleJSON, "", "skill_contract is empty")
		return nil
	}
	clean, err := StripComments(src)
	if err != nil {
		p.fail(RuleJSON, "", "%s", strings.TrimPrefix(err.Error(), "contract: "))
		return nil
	}
	if len(bytes.TrimSpace(clean)) == 0 {
		p.fail(RuleJSON, "", "skill_contract holds only comments")
		return nil
	}
	if !json.Valid(clean) {
		var v any
		err := json.Unmarshal(clean, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(clean, se.Offset)
			p.fail(RuleJSON, "", "line %d column %d: %v", line, col, err)
		} else {
			p.fail(RuleJSON, "", "%v", err)
		}
		return nil
	}
	root := gjson.ParseBytes(clean)
	if !root.IsObject() {
		p.fail(RuleJSON, "", "want a JSON object, got %s", typeName(root))
		return nil
	}
	// A key twice in one object, at any depth, is rule 1: it is not JSON
	// every reader reads alike (encoding/json keeps the last, gjson the
	// first), so the skill would mean one thing here and another in a
	// guard. Other problems are still reported.
	if err := abi.CheckDuplicateKeys(clean); err != nil {
		path, detail := duplicateAt(err)
		p.fail(RuleJSON, path, "%s", detail)
	}
	c := &Contract{
		SkillKey: p.key,
		Mode:     Mode(p.enum(field(root, "mode"), "mode", modes, string(ModeReact))),
		Target:   p.str(field(root, "target"), "target"),
		Inputs:   map[string]*Input{},
		Outputs:  map[string]*Output{},
		Tools:    map[string]*Tool{},
	}
	if b := p.boolean(field(root, "delegatable"), "delegatable"); b != nil {
		c.Delegatable = *b
	}
	p.each(field(root, "inputs"), "inputs", func(k string, v gjson.Result, path string) {
		c.Inputs[k] = p.input(k, v, path)
	})
	p.each(field(root, "outputs"), "outputs", func(k string, v gjson.Result, path string) {
		c.Outputs[k] = p.output(k, v, path)
	})
	p.each(field(root, "tools"), "tools", func(k string, v gjson.Result, path string) {
		if k == "" {
			p.fail(RuleToolKey, path, "tool names must be non-empty")
			return
		}
		c.Tools[k] = p.tool(k, v, path)
	})
	p.array(field(root, "guards"), "guards", func(i int, v gjson.Result, path string) {
		if g, ok := p.guard(v, path); ok {
			c.Guards = append(c.Guards, g)
		}
	})
	p.crossChecks(c)
	return c
}

// crossChecks are the rules that look at more than one attribute: 3, 4, 8, W9.
func (p *parser) crossChecks(c *Contract) {
	if c.Target != "" {
		if t := c.Tools[c.Target]; t == nil {
			p.fail(RuleTarget, "target", "%q is not a key of tools", c.Target)
		} else if !t.IsWrite() {
			p.fail(RuleTarget, "target", "tool %q has sideEffect %s", c.Target, t.SideEffect)
		}
	}
	if c.Delegatable {
		if w := c.WriteTools(); len(w) > 0 {
			p.fail(RuleDelegatable, "delegatable", "WRITE tools: %s", strings.Join(w, ", "))
		}
	}
	for _, name := range c.ToolNames() {
		t := c.Tools[name]
		base := join("tools", name)
		if t.Verify != nil {
			vt := t.Verify.Tool
			switch {
			case vt == "":
				p.fail(RuleVerifyTool, base+".verify.tool", "verify.tool is empty")
			case c.Tools[vt] == nil && p.single:
			case c.Tools[vt] == nil:
				p.fail(RuleVerifyTool, base+".verify.tool", "%q is not a key of tools", vt)
			case c.Tools[vt].IsWrite():
				p.fail(RuleVerifyTool, base+".verify.tool", "%q has sideEffect WRITE, want NONE", vt)
			}
		}
		if fb := t.Fallback; fb != "" {
			switch {
			case t.IsWrite():
				p.fail(RuleFallback, base+".fallback", "fallback is only allowed on sideEffect NONE tools")
			case fb == name:
				p.fail(RuleFallback, base+".fallback", "fallback is the tool itself")
			case c.Tools[fb] == nil && p.single:
			case c.Tools[fb] == nil:
				p.fail(RuleFallback, base+".fallback", "%q is not a key of tools", fb)
			case c.Tools[fb].IsWrite():
				p.fail(RuleFallback, base+".fallback", "%q has sideEffect WRITE, want NONE", fb)
			}
		}
		for _, ap := range t.ArgPaths() {
			a := t.Args[ap]
			if a.Missing.Tool != "" && a.Missing.Tool == name {
				p.warn(WarnMissingSelf, base+".args."+ap+".missing.tool", "missing.tool is the parameter's own tool %q", name)
			}
		}
	}
	for _, name := range c.InputNames() {
		if in := c.Inputs[name]; in.Provider != "" && in.Provider == c.SkillKey {
			p.warn(WarnProviderSelf, "inputs."+name+".provider", "provider is the skill itself")
		}
	}
}

func (p *parser) input(name string, v gjson.Result, path string) *Input {
	in := &Input{Name: name, Required: true}
	if !p.object(v, path) {
		return in
	}
	if s := p.str(field(v, "from"), path+".from"); s != "" {
		e, err := ParseInputExpr(s)
		switch {
		case err != nil:
			p.exprFail(path+".from", err)
		case e.Kind == ExprCall:
			p.fail(RuleExprPrefix, path+".from", "call. is only allowed in verify.args")
		default:
			if e.Kind == ExprUpstream {
				e.Path = ParamPath{raw: name, segs: []pathSeg{{name: name}}}
				e.Path.setPlain()
			}
			in.From = e
		}
	}
	if b := p.boolean(field(v, "required"), path+".required"); b != nil {
		in.Required = *b
	}
	in.Provider = p.str(field(v, "provider"), path+".provider")
	return in
}

func (p *parser) output(key string, v gjson.Result, path string) *Output {
	o := &Output{Key: key, Type: OutputValue, MinItems: 1, Required: true}
	if IsPlatformField(key) {
		p.warn(WarnPlatformOutput, path, "output key %q is a reserved platform field name", key)
	}
	if !p.object(v, path) {
		return o
	}
	o.Type = OutputType(p.enum(field(v, "type"), path+".type", outputTypes, string(OutputValue)))
	o.Fields = p.strList(field(v, "fields"), path+".fields")
	if n := p.integer(field(v, "minItems"), path+".minItems"); n != nil {
		o.MinItems = int(*n)
	}
	o.Hint = p.str(field(v, "hint"), path+".hint")
	if b := p.boolean(field(v, "required"), path+".required"); b != nil {
		o.Required = *b
	}
	o.Share = Share(p.enum(field(v, "share"), path+".share", shares, ""))
	o.Entity = p.entity(field(v, "entity"), path+".entity")
	o.Sources = p.sources(field(v, "sources"), path+".sources")
	o.Constant = rawValue(field(v, "constant"))
	if b := p.boolean(field(v, "sensitive"), path+".sensitive"); b != nil {
		o.Sensitive = *b
	}
	if o.Type == OutputList && len(o.Fields) == 0 {
		p.fail(RuleListFields, path+".fields", "type LIST needs a non-empty fields list")
	}
	return o
}

func (p *parser) tool(name string, v gjson.Result, path string) *Tool {
	t := &Tool{Name: name, SideEffect: SideEffectNone, Args: map[string]*Arg{}}
	if !p.object(v, path) {
		return t
	}
	t.Label = p.str(field(v, "label"), path+".label")
	t.SideEffect = SideEffect(p.enum(field(v, "sideEffect"), path+".sideEffect", sideEffects, string(SideEffectNone)))
	t.Confirm = p.boolean(field(v, "confirm"), path+".confirm")
	if t.Confirm != nil && *t.Confirm && !t.IsWrite() {
		p.fail(RuleConfirm, path+".confirm", "tool has sideEffect %s", t.SideEffect)
	}
	t.IdempotencyKey = p.strList(field(v, "idempotencyKey"), path+".idempotencyKey")
	p.each(field(v, "args"), path+".args", func(k string, av gjson.Result, apath string) {
		if a := p.arg(k, av, apath); a != nil {
			t.Args[k] = a
		}
	})
	t.argPaths = sortedKeys(t.Args)
	if s := field(v, "success"); p.object(s, path+".success") && s.IsObject() {
		t.Success = &Success{
			Path:  p.str(field(s, "path"), path+".success.path"),
			Op:    Op(p.enum(field(s, "op"), path+".success.op", ops, "")),
			Value: rawJSON(field(s, "value")),
		}
	}
	if t.IsWrite() && t.Success == nil {
		p.fail(RuleWriteSuccess, path+".success", "a WRITE tool must configure success")
	}
	if e := field(v, "error"); p.object(e, path+".error") && e.IsObject() {
		t.Error = &ErrorPaths{Code: p.str(field(e, "code"), path+".error.code"), Message: p.str(field(e, "message"), path+".error.message")}
	}
	p.array(field(v, "extracts"), path+".extracts", func(i int, x gjson.Result, xpath string) {
		if !p.object(x, xpath) {
			return
		}
		ex := Extract{
			Key:    p.str(field(x, "key"), xpath+".key"),
			Path:   p.str(field(x, "path"), xpath+".path"),
			Fields: p.strList(field(x, "fields"), xpath+".fields"),
			Entity: p.entity(field(x, "entity"), xpath+".entity"),
		}
		if ex.Path == "" {
			p.fail(RuleExtractPath, xpath+".path", "extracts[].path must be non-empty")
		}
		t.Extracts = append(t.Extracts, ex)
	})
	if vv := field(v, "verify"); p.object(vv, path+".verify") && vv.IsObject() {
		t.Verify = &Verify{Tool: p.str(field(vv, "tool"), path+".verify.tool"), Args: map[string]*VerifyArg{}}
		p.each(field(vv, "args"), path+".verify.args", func(k string, av gjson.Result, apath string) {
			va := &VerifyArg{}
			if !p.object(av, apath) {
				return
			}
			va.Const = rawValue(field(av, "const"))
			if s := p.str(field(av, "from"), apath+".from"); s != "" {
				e, err := ParseExpr(s)
				switch {
				case err != nil:
					p.exprFail(apath+".from", err)
				case e.Kind != ExprCall:
					p.fail(RuleExprPrefix, apath+".from", "verify.args supports only call.<path>, got %q", s)
				default:
					va.From = e
				}
				if va.Const != nil {
					p.fail(RuleFromConst, apath, "from and const are mutually exclusive")
				}
			}
			t.Verify.Args[k] = va
		})
	}
	// Warden extensions.
	if n := p.integer(field(v, "timeoutMs"), path+".timeoutMs"); n != nil {
		if *n <= 0 || *n > maxTimeoutMs {
			p.fail(RuleToolTimeout, path+".timeoutMs", "%d is outside 1..%d", *n, maxTimeoutMs)
		}
		t.TimeoutMs = n
	}
	t.Fallback = p.str(field(v, "fallback"), path+".fallback")
	if r := field(v, "retry"); p.object(r, path+".retry") && r.IsObject() {
		t.Retry = p.retry(r, path+".retry")
		if t.IsWrite() {
			p.fail(RuleRetryOnWrite, path+".retry", "retry is only allowed on sideEffect NONE tools; a repeated write is made safe by idempotencyKey and verify")
		}
	}
	return t
}

const (
	maxTimeoutMs   = 600_000
	maxAttempts    = 10
	maxBackoffMs   = 60_000
	maxMultiplier  = 10
	defaultInitial = 1000
	defaultMult    = 2
	defaultMax     = 4000
)

func (p *parser) retry(r gjson.Result, path string) *Retry {
	rt := &Retry{Backoff: Backoff{InitialMs: defaultInitial, Multiplier: defaultMult, MaxMs: defaultMax}}
	n := p.integer(field(r, "maxAttempts"), path+".maxAttempts")
	switch {
	case n == nil:
		p.fail(RuleRetryPolicy, path+".maxAttempts", "maxAttempts is required")
	case *n < 1 || *n > maxAttempts:
		p.fail(RuleRetryPolicy, path+".maxAttempts", "%d is outside 1..%d", *n, maxAttempts)
	default:
		rt.MaxAttempts = int(*n)
	}
	b := field(r, "backoff")
	if !p.object(b, path+".backoff") || !b.IsObject() {
		return rt
	}
	if v := p.integer(field(b, "initialMs"), path+".backoff.initialMs"); v != nil {
		if *v < 1 || *v > maxBackoffMs {
			p.fail(RuleRetryPolicy, path+".backoff.initialMs", "%d is outside 1..%d", *v, maxBackoffMs)
		}
		rt.Backoff.InitialMs = *v
	}
	if v := p.number(field(b, "multiplier"), path+".backoff.multiplier"); v != nil {
		if *v < 1 || *v > maxMultiplier {
			p.fail(RuleRetryPolicy, path+".backoff.multiplier", "%g is outside 1..%d", *v, maxMultiplier)
		}
		rt.Backoff.Multiplier = *v
	}
	if v := p.integer(field(b, "maxMs"), path+".backoff.maxMs"); v != nil {
		if *v < 1 || *v > maxBackoffMs {
			p.fail(RuleRetryPolicy, path+".backoff.maxMs", "%d is outside 1..%d", *v, maxBackoffMs)
		}
		rt.Backoff.MaxMs = *v
	}
	if rt.Backoff.MaxMs < rt.Backoff.InitialMs {
		p.fail(RuleRetryPolicy, path+".backoff.maxMs", "maxMs %d is below initialMs %d", rt.Backoff.MaxMs, rt.Backoff.InitialMs)
	}
	return rt
}

var (
	guardNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*@[0-9A-Za-z][0-9A-Za-z.+-]*$`)
	guardHashRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

func (p *parser) guard(v gjson.Result, path string) (Guard, bool) {
	g := Guard{Position: "last", Failure: FailClosed}
	if !p.object(v, path) || !v.IsObject() {
		return g, false
	}
	g.Ref = p.str(field(v, "ref"), path+".ref")
	if !guardNameRe.MatchString(g.Ref) && !guardHashRe.MatchString(g.Ref) {
		p.fail(RuleGuardRef, path+".ref", "%q: want name@version or sha256:<64 lowercase hex>", g.Ref)
	}
	g.Phase = GuardPhase(p.str(field(v, "phase"), path+".phase"))
	if g.Phase != PhaseBefore && g.Phase != PhaseAfter {
		p.fail(RuleGuardPhase, path+".phase", "%q: want before or after", g.Phase)
	}
	if pos := p.str(field(v, "position"), path+".position"); pos != "" {
		g.Position = pos
	}
	if msg := checkPosition(g.Phase, g.Position); msg != "" {
		p.fail(RuleGuardPosition, path+".position", "%s", msg)
	}
	if cfg := field(v, "config"); cfg.Exists() && cfg.Type != gjson.Null {
		if !cfg.IsObject() {
			p.fail(RuleGuardConfig, path+".config", "got %s", typeName(cfg))
		}
		g.Config = json.RawMessage(cfg.Raw)
	}
	if f := p.str(field(v, "failure"), path+".failure"); f != "" {
		g.Failure = FailurePolicy(f)
		if !slices.Contains([]FailurePolicy{FailClosed, FailOpen, FailShadow}, g.Failure) {
			p.fail(RuleGuardFailure, path+".failure", "%q: want closed, open or shadow", f)
		}
	}
	return g, true
}

func checkPosition(phase GuardPhase, pos string) string {
	if pos == "first" || pos == "last" {
		return ""
	}
	rel, anchor, ok := strings.Cut(pos, ":")
	if !ok || (rel != "before" && rel != "after") {
		return fmt.Sprintf("%q: want first, last, before:<Guard> or after:<Guard>", pos)
	}
	names, known := FirstPartyGuards[phase]
	if !known {
		return "" // the phase error is reported on its own
	}
	if !slices.Contains(names, anchor) {
		return fmt.Sprintf("%q: %q is not a first-party %s guard (%s)", pos, anchor, phase, strings.Join(names, ", "))
	}
	return ""
}

func (p *parser) arg(key string, v gjson.Result, path string) *Arg {
	pp, err := ParseParamPath(key)
	if err != nil {
		p.fail(RuleJSON, path, "parameter path %q: %s", key, pathProblem(err))
		return nil
	}
	a := &Arg{Path: pp, When: WhenAlways, Required: true, Missing: Missing{Action: MissingAskUser}}
	if !p.object(v, path) {
		return a
	}
	if s := p.str(field(v, "from"), path+".from"); s != "" {
		e, err := ParseExpr(s)
		switch {
		case err != nil:
			p.exprFail(path+".from", err)
		case e.Kind == ExprCall:
			p.fail(RuleExprPrefix, path+".from", "call. is only allowed in verify.args")
		default:
			a.From = e
		}
	}
	a.Const = rawValue(field(v, "const"))
	if a.Const != nil && field(v, "from").Type == gjson.String && field(v, "from").Str != "" {
		p.fail(RuleFromConst, path, "from and const are mutually exclusive")
	}
	a.When = When(p.enum(field(v, "when"), path+".when", whens, string(WhenAlways)))
	a.Sources = p.sources(field(v, "sources"), path+".sources")
	if b := p.boolean(field(v, "required"), path+".required"); b != nil {
		a.Required = *b
	}
	p.array(field(v, "enum"), path+".enum", func(_ int, e gjson.Result, _ string) {
		a.Enum = append(a.Enum, json.RawMessage(e.Raw))
	})
	switch m := field(v, "missing"); {
	case m.Type == gjson.String:
		// Shorthand "missing": "CALL_TOOL" (used in §5.3's table).
		a.Missing.Action = MissingAction(p.enum(m, path+".missing", missingActions, string(MissingAskUser)))
	case p.object(m, path+".missing") && m.IsObject():
		a.Missing.Action = MissingAction(p.enum(field(m, "action"), path+".missing.action", missingActions, string(MissingAskUser)))
		a.Missing.Tool = p.str(field(m, "tool"), path+".missing.tool")
		a.Missing.Message = p.str(field(m, "message"), path+".missing.message")
	}
	if b := p.boolean(field(v, "sensitive"), path+".sensitive"); b != nil {
		a.Sensitive = *b
	}
	a.Label = p.str(field(v, "label"), path+".label")
	a.Fresh = p.boolean(field(v, "fresh"), path+".fresh")
	if leaf := pp.Leaf(); IsPlatformField(leaf) && (a.From == nil || a.From.Kind != ExprPlatform) {
		p.warn(WarnPlatformLeaf, path, "parameter %q is named like platform field %q but is not bound with from: platform.%s", key, leaf, leaf)
	}
	return a
}

func (p *parser) exprFail(path string, err error) {
	rule := RuleExprPrefix
	if errors.Is(err, ErrPlatformField) {
		rule = RulePlatformField
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "contract: ")
	// Drop the sentinel text: LoadError.Error adds it back.
	msg = strings.Replace(msg, ErrExprPrefix.Error()+": ", "", 1)
	msg = strings.Replace(msg, ErrPlatformField.Error()+": ", "", 1)
	p.fail(rule, path, "%s", msg)
}

func (p *parser) entity(v gjson.Result, path string) *EntitySpec {
	if !p.object(v, path) || !v.IsObject() {
		return nil
	}
	e := &EntitySpec{
		Type:   p.str(field(v, "type"), path+".type"),
		ID:     p.str(field(v, "id"), path+".id"),
		Name:   p.str(field(v, "name"), path+".name"),
		Scalar: p.str(field(v, "scalar"), path+".scalar"),
	}
	if e.ID == "" {
		e.ID = "id"
	}
	if e.Name == "" {
		e.Name = "name"
	}
	return e
}

func (p *parser) sources(v gjson.Result, path string) []SourceType {
	var out []SourceType
	p.array(v, path, func(i int, e gjson.Result, epath string) {
		if s := p.enum(e, epath, sourceTypes, ""); s != "" {
			out = append(out, SourceType(s))
		}
	})
	return out
}

// Typed readers. Each treats a missing key and JSON null as "not configured",
// reports a wrong JSON type under rule 1 and returns the zero value.

func (p *parser) str(v gjson.Result, path string) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Null:
		return ""
	}
	p.fail(RuleJSON, path, "want string, got %s", typeName(v))
	return ""
}

func (p *parser) enum(v gjson.Result, path string, allowed []string, def string) string {
	s := p.str(v, path)
	if s == "" {
		return def
	}
	if !slices.Contains(allowed, s) {
		p.fail(RuleEnum, path, "%q is not one of %s (case-sensitive)", s, strings.Join(allowed, ", "))
		return def
	}
	return s
}

func (p *parser) boolean(v gjson.Result, path string) *bool {
	switch {
	case v.Type == gjson.True || v.Type == gjson.False:
		b := v.Type == gjson.True
		return &b
	case v.Type == gjson.Null, v.Type == gjson.String && v.Str == "":
		return nil
	}
	p.fail(RuleJSON, path, "want boolean, got %s", typeName(v))
	return nil
}

func (p *parser) integer(v gjson.Result, path string) *int64 {
	switch {
	case v.Type == gjson.Null, v.Type == gjson.String && v.Str == "":
		return nil
	case v.Type == gjson.Number:
		if n, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
			return &n
		}
		if f := v.Num; f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			n := int64(f)
			return &n
		}
	}
	p.fail(RuleJSON, path, "want integer, got %s", typeName(v))
	return nil
}

func (p *parser) number(v gjson.Result, path string) *float64 {
	switch {
	case v.Type == gjson.Null, v.Type == gjson.String && v.Str == "":
		return nil
	case v.Type == gjson.Number:
		f := v.Num
		return &f
	}
	p.fail(RuleJSON, path, "want number, got %s", typeName(v))
	return nil
}

func (p *parser) strList(v gjson.Result, path string) []string {
	var out []string
	p.array(v, path, func(i int, e gjson.Result, epath string) {
		if s := p.str(e, epath); s != "" {
			out = append(out, s)
		}
	})
	return out
}

// object reports whether v may be read as an object: it fails rule 1 for a
// non-object and returns false for absent or null values too.
func (p *parser) object(v gjson.Result, path string) bool {
	switch {
	case v.IsObject():
		return true
	case v.Type == gjson.Null:
		return false
	}
	p.fail(RuleJSON, path, "want object, got %s", typeName(v))
	return false
}

func (p *parser) each(v gjson.Result, path string, fn func(k string, v gjson.Result, path string)) {
	if !p.object(v, path) {
		return
	}
	seen := map[string]bool{}
	var keys []string
	var vals []gjson.Result
	v.ForEach(func(k, val gjson.Result) bool {
		// Duplicate keys are refused (rule 1) before; should one get here
		// the last wins, as in encoding/json.
		if seen[k.Str] {
			i := slices.Index(keys, k.Str)
			vals[i] = val
			return true
		}
		seen[k.Str] = true
		keys = append(keys, k.Str)
		vals = append(vals, val)
		return true
	})
	for i, k := range keys {
		fn(k, vals[i], join(path, k))
	}
}

func (p *parser) array(v gjson.Result, path string, fn func(i int, v gjson.Result, path string)) {
	switch {
	case v.Type == gjson.Null:
		return
	case !v.IsArray():
		p.fail(RuleJSON, path, "want array, got %s", typeName(v))
		return
	}
	for i, e := range v.Array() {
		fn(i, e, fmt.Sprintf("%s[%d]", path, i))
	}
}

// rawValue returns a JSON value as configured; absent and null are "not configured".
func rawValue(v gjson.Result) json.RawMessage {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	return json.RawMessage(v.Raw)
}

// rawJSON returns a JSON value, keeping an explicit null.
func rawJSON(v gjson.Result) json.RawMessage {
	if !v.Exists() {
		return nil
	}
	return json.RawMessage(v.Raw)
}

func typeName(v gjson.Result) string {
	switch {
	case !v.Exists():
		return "nothing"
	case v.IsObject():
		return "object"
	case v.IsArray():
		return "array"
	}
	switch v.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "boolean"
	case gjson.Null:
		return "null"
	}
	return "JSON"
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(b []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(b)))
	line := 1 + bytes.Count(b[:off], []byte{'\n'})
	col := int(off) - bytes.LastIndexByte(b[:off], '\n')
	return line, col
}

// field returns the value of key in an object; with duplicate keys the last
// one wins, as in encoding/json.
// duplicateAt splits abi.CheckDuplicateKeys's error into the contract path
// of the object holding the key twice ("tools.create_site.args") and the
// detail (`key "from" appears twice`).
func duplicateAt(err error) (path, detail string) {
	msg := strings.TrimPrefix(err.Error(), "abi: strict json: ")
	if !errors.Is(err, abi.ErrDuplicateKey) {
		return "", msg
	}
	i := strings.LastIndex(msg, " in $")
	if i < 0 {
		return "", msg
	}
	key := strings.TrimPrefix(msg[:i], abi.ErrDuplicateKey.Error()+" ")
	return strings.TrimPrefix(msg[i+len(" in $"):], "."), "key " + key + " appears twice"
}

func field(obj gjson.Result, key string) gjson.Result {
	var out gjson.Result
	if !obj.IsObject() {
		return out
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key {
			out = v
		}
		return true
	})
	return out
}
