package contract

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFixture(t testing.TB, path string) (string, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), b
}

type wantProblem struct {
	rule Rule
	path string
	msg  string
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []wantProblem
	}{
		{"rule01_empty", []wantProblem{{"1", "", "skill_contract is empty or not valid JSON: skill_contract is empty"}}},
		{"rule01_only_comments", []wantProblem{{"1", "", "skill_contract is empty or not valid JSON: skill_contract holds only comments"}}},
		{"rule01_syntax", []wantProblem{{"1", "", "skill_contract is empty or not valid JSON: line 3 column 41: invalid character '}' looking for beginning of object key string"}}},
		{"rule01_unterminated_comment", []wantProblem{{"1", "", "skill_contract is empty or not valid JSON: unterminated comment opened at line 2 column 3"}}},
		{"rule01_not_object", []wantProblem{{"1", "", "skill_contract is empty or not valid JSON: want a JSON object, got array"}}},
		{"rule01_wrong_type", []wantProblem{{"1", "tools.create_article.args.title.required", "skill_contract is empty or not valid JSON: want boolean, got string"}}},
		{"rule02_unknown_prefix", []wantProblem{{"2", "tools.create_article.args.title.from", `invalid expression prefix: expression "input.title": unknown prefix "input."`}}},
		{"rule02_call_in_args", []wantProblem{{"2", "tools.create_article.args.title.from", "invalid expression prefix: call. is only allowed in verify.args"}}},
		{"rule02_verify_prefix", []wantProblem{{"2", "tools.create_article.verify.args.title.from", `invalid expression prefix: verify.args supports only call.<path>, got "shared.title"`}}},
		{"rule02_input_call", []wantProblem{{"2", "inputs.spaceId.from", "invalid expression prefix: call. is only allowed in verify.args"}}},
		{"rule02_empty_path", []wantProblem{{"2", "tools.create_article.args.spaceId.from", `invalid expression prefix: expression "shared.": path empty`}}},
		{"rule03_target_not_write", []wantProblem{{"3", "target", `target is not a WRITE tool: tool "query_article" has sideEffect NONE`}}},
		{"rule03_target_unknown", []wantProblem{{"3", "target", `target is not a WRITE tool: "publish_article" is not a key of tools`}}},
		{"rule04_delegatable_write", []wantProblem{{"4", "delegatable", "delegatable skill has a WRITE tool: WRITE tools: create_article"}}},
		{"rule05_empty_tool_key", []wantProblem{{"5", `tools.""`, "empty tool key: tool names must be non-empty"}}},
		{"rule06_write_no_success", []wantProblem{{"6", "tools.create_article.success", "WRITE tool without success: a WRITE tool must configure success"}}},
		{"rule07_confirm_on_read", []wantProblem{{"7", "tools.query_article.confirm", "confirm: true on a non-WRITE tool: tool has sideEffect NONE"}}},
		{"rule08_verify_tool_empty", []wantProblem{{"8", "tools.create_article.verify.tool", "invalid verify.tool: verify.tool is empty"}}},
		{"rule08_verify_tool_unknown", []wantProblem{{"8", "tools.create_article.verify.tool", `invalid verify.tool: "find_article" is not a key of tools`}}},
		{"rule08_verify_tool_write", []wantProblem{{"8", "tools.create_article.verify.tool", `invalid verify.tool: "update_article" has sideEffect WRITE, want NONE`}}},
		{"rule09_from_and_const", []wantProblem{{"9", "tools.create_article.args.spaceId", "parameter has both from and const: from and const are mutually exclusive"}}},
		{"rule10_hidden_platform", []wantProblem{{"10", "tools.create_article.args.authorId.from", `platform field is not open: expression "platform.passportId": passportId is hidden`}}},
		{"rule10_unknown_platform", []wantProblem{{"10", "tools.create_article.args.authorId.from", `platform field is not open: expression "platform.userID": unknown field "userID" (open: userId, memberId, name, organId, organName, organType, deptPath)`}}},
		{"rule10_input_platform", []wantProblem{{"10", "inputs.owner.from", `platform field is not open: expression "platform.clientId": clientId is hidden`}}},
		{"rule11_extract_path", []wantProblem{{"11", "tools.query_article.extracts[1].path", "extract without path: extracts[].path must be non-empty"}}},
		{"rule12_list_fields", []wantProblem{{"12", "outputs.articles.fields", "LIST output without fields: type LIST needs a non-empty fields list"}}},
		{"rule13_mode", []wantProblem{{"13", "mode", `invalid enum value: "react" is not one of REACT, PLAN (case-sensitive)`}}},
		{"rule13_side_effect_case", []wantProblem{{"13", "tools.query_article.sideEffect", `invalid enum value: "none" is not one of NONE, WRITE (case-sensitive)`}}},
		{"rule13_source", []wantProblem{{"13", "tools.create_article.args.title.sources[1]", `invalid enum value: "Model" is not one of USER, EVIDENCE, NODE_OUTPUT, SHARED, SESSION, PRIOR_TASK, MODEL, CONTRACT, PLATFORM (case-sensitive)`}}},
		{"rule13_when", []wantProblem{{"13", "tools.create_article.args.spaceId.when", `invalid enum value: "ONCE" is not one of ALWAYS, UNIQUE (case-sensitive)`}}},
		{"rule13_missing_action", []wantProblem{{"13", "tools.create_article.args.title.missing.action", `invalid enum value: "ASK" is not one of ASK_USER, CALL_TOOL, FAIL (case-sensitive)`}}},
		{"rule13_op", []wantProblem{{"13", "tools.query_article.success.op", `invalid enum value: "GT" is not one of EQ, NE, IN, NOT_IN, TRUTHY, EXISTS (case-sensitive)`}}},
		{"rule13_output_type", []wantProblem{{"13", "outputs.summary.type", `invalid enum value: "TEXT" is not one of VALUE, LIST (case-sensitive)`}}},
		{"rule13_share", []wantProblem{{"13", "outputs.summary.share", `invalid enum value: "GLOBAL" is not one of TASK, SESSION (case-sensitive)`}}},
		{"w1_guard_ref", []wantProblem{{"W1", "guards[0].ref", `invalid guard ref: "Audit": want name@version or sha256:<64 lowercase hex>`}}},
		{"w2_guard_phase", []wantProblem{{"W2", "guards[0].phase", `invalid guard phase: "BEFORE": want before or after`}}},
		{"w3_guard_position", []wantProblem{{"W3", "guards[0].position", `invalid guard position: "before:ArgPolicy": "ArgPolicy" is not a first-party after guard (ResponseContract, WriteGate, Evidence, Fingerprint)`}}},
		{"w4_guard_failure", []wantProblem{{"W4", "guards[0].failure", `invalid guard failure policy: "ignore": want closed, open or shadow`}}},
		{"w5_guard_config", []wantProblem{{"W5", "guards[0].config", "guard config is not an object: got array"}}},
		{"w6_timeout", []wantProblem{{"W6", "tools.query_article.timeoutMs", "invalid timeoutMs: 0 is outside 1..600000"}}},
		{"w7_retry_on_write", []wantProblem{{"W7", "tools.create_article.retry", "retry on a WRITE tool: retry is only allowed on sideEffect NONE tools; a repeated write is made safe by idempotencyKey and verify"}}},
		{"w8_retry_policy", []wantProblem{{"W8", "tools.query_article.retry.backoff.maxMs", "invalid retry policy: maxMs 1000 is below initialMs 2000"}}},
		{"w9_fallback", []wantProblem{{"W9", "tools.create_doc.fallback", "invalid fallback tool: fallback is only allowed on sideEffect NONE tools"}, {"W9", "tools.search_docs.fallback", "invalid fallback tool: \"search_cache\" is not a key of tools"}}},
		{"multi_errors", []wantProblem{
			{"11", "tools.query_article.extracts[0].path", "extract without path: extracts[].path must be non-empty"},
			{"6", "tools.create_article.success", "WRITE tool without success: a WRITE tool must configure success"},
			{"4", "delegatable", "delegatable skill has a WRITE tool: WRITE tools: create_article"},
		}},
	}
	files, _ := filepath.Glob("testdata/invalid/*.json")
	if len(files) != len(tests) {
		t.Errorf("testdata/invalid has %d files, the table %d", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			key, src := readFixture(t, "testdata/invalid/"+tt.file+".json")
			c, _, err := Parse(key, src)
			if c != nil || err == nil {
				t.Fatalf("Parse = %v, %v; want an error", c, err)
			}
			got := Problems(err)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(got), len(tt.want), err)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Rule != w.rule || g.Path != w.path || g.Message() != w.msg || g.SkillKey != key {
					t.Errorf("problem %d = {%q %q %q %q}\nwant {%q %q %q %q}", i, g.SkillKey, g.Rule, g.Path, g.Message(), key, w.rule, w.path, w.msg)
				}
				if !errors.Is(err, ruleSentinel[w.rule]) {
					t.Errorf("errors.Is(err, sentinel of rule %s) = false", w.rule)
				}
				if !errors.Is(err, &LoadError{Rule: w.rule, Path: w.path}) {
					t.Errorf("errors.Is(err, &LoadError{%s %s}) = false", w.rule, w.path)
				}
			}
		})
	}
}

func TestLoadErrorString(t *testing.T) {
	t.Parallel()
	e := &LoadError{SkillKey: "cms.article", Path: "tools.create_article.args.title.from", Rule: RuleExprPrefix, Detail: `expression "input.title": unknown prefix "input."`}
	want := `contract: skill "cms.article": tools.create_article.args.title.from: rule 2: invalid expression prefix: expression "input.title": unknown prefix "input."`
	if e.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", e.Error(), want)
	}
	if errors.Is(e, ErrWriteNoSuccess) || !errors.Is(e, ErrExprPrefix) {
		t.Error("Is by sentinel is wrong")
	}
	if errors.Is(e, &LoadError{Rule: RuleExprPrefix, SkillKey: "other"}) {
		t.Error("a LoadError of another skill matched")
	}
	if got := (&LoadError{SkillKey: "k", Rule: RuleJSON, Detail: "x"}).Error(); got != `contract: skill "k": rule 1: skill_contract is empty or not valid JSON: x` {
		t.Errorf("without path: %s", got)
	}
}

func TestParseWarnings(t *testing.T) {
	t.Parallel()
	key, src := readFixture(t, "testdata/valid/warn_platform_leaf.json")
	c, warns, err := Parse(key, src)
	if err != nil || c == nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []Warning{
		{key, "outputs.name", WarnPlatformOutput, `output key "name" is a reserved platform field name`},
		{key, "tools.assign_ticket.args.userId", WarnPlatformLeaf, `parameter "userId" is named like platform field "userId" but is not bound with from: platform.userId`},
		{key, "tools.assign_ticket.args.owner.organId", WarnPlatformLeaf, `parameter "owner.organId" is named like platform field "organId" but is not bound with from: platform.organId`},
		{key, "tools.assign_ticket.args.missingSelf.missing.tool", WarnMissingSelf, `missing.tool is the parameter's own tool "assign_ticket"`},
		{key, "inputs.account.provider", WarnProviderSelf, "provider is the skill itself"},
	}
	if len(warns) != len(want) {
		t.Fatalf("warnings = %v", warns)
	}
	for i := range want {
		if warns[i] != want[i] {
			t.Errorf("warning %d = %+v, want %+v", i, warns[i], want[i])
		}
	}
	if got := warns[0].String(); got != `contract: skill "warn_platform_leaf": outputs.name: warning P2: output key "name" is a reserved platform field name` {
		t.Errorf("String() = %s", got)
	}
}

func TestParseValidFiles(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/valid/*")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			key, src := readFixture(t, f)
			c, _, err := Parse(key, src)
			if err != nil || c == nil {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	c, warns, err := Parse("defaults", []byte(`{"tools":{"t":{"args":{"a":{}}}},"outputs":{"o":{}},"inputs":{"i":{}}}`))
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	if c.Mode != ModeReact || c.Delegatable || c.Target != "" {
		t.Errorf("root defaults: %+v", c)
	}
	tool := c.Tool("t")
	if tool.SideEffect != SideEffectNone || tool.Confirm != nil || tool.NeedsConfirm() || tool.Success != nil || tool.Error != nil || tool.Verify != nil || tool.Retry != nil || tool.TimeoutMs != nil {
		t.Errorf("tool defaults: %+v", tool)
	}
	a := tool.Args["a"]
	if a.When != WhenAlways || !a.Required || a.Missing != (Missing{Action: MissingAskUser}) || a.From != nil || a.Const != nil || a.Fresh != nil || a.Sensitive {
		t.Errorf("arg defaults: %+v", a)
	}
	o := c.Outputs["o"]
	if o.Type != OutputValue || o.MinItems != 1 || !o.Required || o.Share != "" || o.Entity != nil || o.Constant != nil {
		t.Errorf("output defaults: %+v", o)
	}
	if in := c.Inputs["i"]; !in.Required || in.From != nil || in.Provider != "" {
		t.Errorf("input defaults: %+v", in)
	}
	if c.Tool("absent") != nil {
		t.Error("unconfigured tool has a contract")
	}
}

func TestParseConfirmDefault(t *testing.T) {
	t.Parallel()
	c, _, err := Parse("k", []byte(`{"tools":{
		"w":{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"}},
		"wf":{"sideEffect":"WRITE","confirm":false,"success":{"path":"ok","op":"TRUTHY"}},
		"r":{"confirm":false}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Tool("w").NeedsConfirm() || c.Tool("wf").NeedsConfirm() || c.Tool("r").NeedsConfirm() {
		t.Error("confirm defaults wrong")
	}
	if got := c.WriteTools(); strings.Join(got, ",") != "w,wf" {
		t.Errorf("WriteTools = %v", got)
	}
}

func TestParseFull(t *testing.T) {
	t.Parallel()
	key, src := readFixture(t, "testdata/valid/full.jsonc")
	c, warns, err := Parse(key, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if c.Mode != ModePlan || c.Target != "create_invoice" || c.Delegatable {
		t.Errorf("root: %+v", c)
	}
	if in := c.Inputs["customer"]; in.From.Kind != ExprPrior || in.From.EntityType != "customer" || in.From.Attr != "" || in.Provider != "crm.customer.lookup" {
		t.Errorf("inputs.customer: %+v", in)
	}
	if in := c.Inputs["region"]; in.From != nil {
		t.Errorf("inputs.region: %+v", in)
	}
	if in := c.Inputs["orderNo"]; in.Required || in.From.Kind != ExprSession {
		t.Errorf("inputs.orderNo: %+v", in)
	}
	inv := c.Outputs["invoiceNo"]
	if inv.Share != ShareTask || *inv.Entity != (EntitySpec{"invoice", "invoiceNo", "title", "invoiceNo"}) || strings.Join(srcStrings(inv.Sources), ",") != "EVIDENCE,CONTRACT" || inv.Constant != nil {
		t.Errorf("outputs.invoiceNo: %+v", inv)
	}
	lines := c.Outputs["lines"]
	if lines.Type != OutputList || strings.Join(lines.Fields, ",") != "goodsCode,qty" || lines.MinItems != 2 || lines.Hint != "one per line" || lines.Share != ShareSession || lines.Required {
		t.Errorf("outputs.lines: %+v", lines)
	}
	if got := string(c.Outputs["channel"].Constant); got != `{"code": "web"}` {
		t.Errorf("constant keeps raw JSON: %s", got)
	}
	q := c.Tool("query_customer")
	if q.Label != "Look up the customer" || q.NeedsConfirm() || string(q.Success.Value) != `[0, "0", 200]` || q.Success.Op != OpIN || *q.Error != (ErrorPaths{"errCode", "errMsg"}) {
		t.Errorf("query_customer: %+v", q)
	}
	if *q.TimeoutMs != 3000 || q.Retry.MaxAttempts != 4 || q.Retry.Backoff != (Backoff{1000, 2, 4000}) {
		t.Errorf("extensions: %+v %+v", q.TimeoutMs, q.Retry)
	}
	if len(q.Extracts) != 2 || q.Extracts[0].Entity.ID != "customerId" || q.Extracts[1].Key != "" || q.Extracts[1].Entity != nil {
		t.Errorf("extracts: %+v", q.Extracts)
	}
	w := c.Tool("create_invoice")
	if !strings.Contains(w.Label, "http://example.invalid/docs // not a comment") {
		t.Errorf("a // inside a string was taken for a comment: %q", w.Label)
	}
	if !w.IsWrite() || !w.NeedsConfirm() || strings.Join(w.IdempotencyKey, ",") != "orderInfo.orderNo,customerId" {
		t.Errorf("create_invoice: %+v", w)
	}
	cust := w.Args["customerId"]
	if cust.From.Kind != ExprEvidence || cust.From.Key != "customers" || cust.From.Path.String() != "0.customerId" || cust.When != WhenUnique || cust.Missing != (Missing{MissingCallTool, "query_customer", ""}) {
		t.Errorf("customerId: %+v", cust)
	}
	tax := w.Args["orderInfo.taxNo"]
	if !tax.Sensitive || tax.Label != "Tax number" || *tax.Fresh != true || tax.Missing.Action != MissingFail || tax.Missing.Message != "a tax number is required" {
		t.Errorf("taxNo: %+v", tax)
	}
	if string(w.Args["currency"].Const) != `"CNY"` || string(w.Args["lines[].unit"].Const) != `"PCS"` {
		t.Error("const raw JSON")
	}
	it := w.Args["invoiceType"]
	if len(it.Enum) != 2 || string(it.Enum[1]) != `"SPECIAL"` || it.Missing.Action != MissingAskUser {
		t.Errorf("invoiceType: %+v", it)
	}
	if r := w.Args["remark"]; r.From != nil || r.Required {
		t.Errorf("remark: %+v", r)
	}
	if !w.Args["lines[].goodsCode"].IsTemplate() {
		t.Error("lines[].goodsCode should be an array template")
	}
	if w.Verify.Tool != "query_invoice" || w.Verify.Args["orderNo"].From.Kind != ExprCall || string(w.Verify.Args["status"].Const) != `"ISSUED"` {
		t.Errorf("verify: %+v", w.Verify)
	}
	if e := w.Extracts[0].Entity; e.Scalar != "invoiceNo" {
		t.Errorf("entity: %+v", e)
	}
	if c.Tool("void_invoice").NeedsConfirm() {
		t.Error("confirm:false on WRITE")
	}
	if len(c.Guards) != 4 {
		t.Fatalf("guards: %+v", c.Guards)
	}
	g := c.Guards[0]
	if g.Ref != "invoice-policy@1.2.0" || g.Phase != PhaseBefore || g.Position != "after:ParamContract" || string(g.Config) != `{"maxAmount": 10000}` || g.Failure != FailClosed {
		t.Errorf("guard 0: %+v", g)
	}
	if g := c.Guards[3]; g.Failure != FailClosed || g.Config != nil {
		t.Errorf("guard defaults: %+v", g)
	}
	if c.Guards[1].Position != "last" || c.Guards[1].Failure != FailShadow || c.Guards[2].Failure != FailOpen {
		t.Errorf("guards: %+v", c.Guards)
	}
}

func srcStrings(s []SourceType) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return out
}

func TestParseEmptyStringsAreUnset(t *testing.T) {
	t.Parallel()
	key, src := readFixture(t, "testdata/valid/empty_strings.json")
	c, _, err := Parse(key, src)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Tool("save_draft").Args["title"]
	if c.Mode != ModeReact || c.Target != "" || c.Tool("save_draft").SideEffect != SideEffectNone || c.Tool("save_draft").Confirm != nil ||
		a.From != nil || a.When != WhenAlways || a.Missing.Action != MissingAskUser || len(a.Sources) != 1 || c.Outputs["draft"].Type != OutputValue {
		t.Errorf("empty strings not treated as unset: %+v %+v", c, a)
	}
}

func TestParseUnknownKeysAndDuplicates(t *testing.T) {
	t.Parallel()
	// Unknown keys are ignored (§19), and so is a known key in another
	// case: keys are case-sensitive, so "Label" is simply not label.
	c, _, err := Parse("k", []byte(`{"future":1,"Mode":"PLAN","tools":{"t":{"label":"a","Label":"b","whatever":{"x":[1]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeReact || c.Tool("t").Label != "a" {
		t.Errorf("a key in another case was taken: mode %q, label %q", c.Mode, c.Tool("t").Label)
	}
}

// TestParseDuplicateKeys: a key twice in one object, anywhere in the
// contract, is a load error (rule 1) naming the key and the object, since
// readers disagree on which copy wins. Comments do not hide a duplicate.
func TestParseDuplicateKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []wantProblem
	}{
		{"top level", `{"mode":"REACT","mode":"PLAN"}`,
			[]wantProblem{{"1", "", `skill_contract is empty or not valid JSON: key "mode" appears twice`}}},
		{"a tool's label", `{"tools":{"t":{"label":"a","label":"b"}}}`,
			[]wantProblem{{"1", "tools.t", `skill_contract is empty or not valid JSON: key "label" appears twice`}}},
		{"a tool twice", `{"tools":{"t":{"label":"a"},"t":{"label":"b"}}}`,
			[]wantProblem{{"1", "tools", `skill_contract is empty or not valid JSON: key "t" appears twice`}}},
		{"an argument's from", `{"tools":{"t":{"args":{"id":{"from":"shared.a","from":"shared.b"}}}}}`,
			[]wantProblem{{"1", "tools.t.args.id", `skill_contract is empty or not valid JSON: key "from" appears twice`}}},
		{"in a guard's config", `{"guards":[{"ref":"sha256:` + strings.Repeat("a", 64) + `","phase":"before","config":{"max":1,"max":9}}]}`,
			[]wantProblem{{"1", "guards[0].config", `skill_contract is empty or not valid JSON: key "max" appears twice`}}},
		{"escaped", `{"tools":{"t":{"label":"a","\u006cabel":"b"}}}`,
			[]wantProblem{{"1", "tools.t", `skill_contract is empty or not valid JSON: key "label" appears twice`}}},
		{"behind a comment", "{\"target\":\"\", // first\n \"target\":\"\" /* second */}",
			[]wantProblem{{"1", "", `skill_contract is empty or not valid JSON: key "target" appears twice`}}},
		{"other problems are still reported", `{"mode":"react","tools":{"t":{"label":"a","label":"b"}}}`,
			[]wantProblem{{"1", "tools.t", `skill_contract is empty or not valid JSON: key "label" appears twice`},
				{"13", "mode", `invalid enum value: "react" is not one of REACT, PLAN (case-sensitive)`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _, err := Parse("k", []byte(tt.src))
			if c != nil {
				t.Fatalf("a contract with a duplicate key loaded: %+v", c)
			}
			if !errors.Is(err, ErrContractJSON) {
				t.Fatalf("err = %v, want rule 1", err)
			}
			got := Problems(err)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(got), len(tt.want), err)
			}
			for i, w := range tt.want {
				if g := got[i]; g.Rule != w.rule || g.Path != w.path || g.Message() != w.msg {
					t.Errorf("problem %d = {%q %q %q}\nwant {%q %q %q}", i, g.Rule, g.Path, g.Message(), w.rule, w.path, w.msg)
				}
			}
		})
	}
	// A tool's contract on its own, as a guard receives it, is refused too.
	if _, err := ParseTool("t", []byte(`{"label":"a","label":"b"}`)); err == nil || !strings.Contains(err.Error(), `tools.t: rule 1: skill_contract is empty or not valid JSON: key "label" appears twice`) {
		t.Fatalf("ParseTool: %v", err)
	}
}

func TestParseMissingShorthand(t *testing.T) {
	t.Parallel()
	c, _, err := Parse("k", []byte(`{"tools":{"t":{"args":{"id":{"sources":["EVIDENCE"],"missing":"CALL_TOOL"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tool("t").Args["id"].Missing.Action; got != MissingCallTool {
		t.Errorf("missing shorthand = %s", got)
	}
}

func TestStripComments(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"line", "{\"a\":1} // c\n", "{\"a\":1}     \n"},
		{"block", "{/* x\ny */\"a\":1}", "{    \n    \"a\":1}"},
		{"in string", `{"a":"// no /* no */"}`, `{"a":"// no /* no */"}`},
		{"escaped quote", `{"a":"\"//"}//c`, `{"a":"\"//"}   `},
		{"slash alone", `{"a":"x/y"}`, `{"a":"x/y"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := StripComments([]byte(tt.in))
			if err != nil || string(got) != tt.want {
				t.Errorf("StripComments(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	if _, err := StripComments([]byte("{/* open")); !errors.Is(err, errUnterminated) {
		t.Errorf("unterminated: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, glob := range []string{"testdata/valid/*", "testdata/invalid/*", "testdata/store/contracts/*"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"tools":{"t":{"args":{"a[].b[]":{"from":"evidence.k.0.x","when":"UNIQUE"}}}}}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		c, warns, err := Parse("fuzz", src)
		if (c == nil) == (err == nil) {
			t.Fatalf("Parse returned contract %v and error %v", c, err)
		}
		for _, p := range Problems(err) {
			if p.SkillKey != "fuzz" || p.Error() == "" || ruleSentinel[p.Rule] == nil {
				t.Fatalf("bad problem %#v", p)
			}
		}
		_ = warns
		if c == nil {
			return
		}
		// Exercise the runtime paths on whatever parsed.
		for _, name := range c.ToolNames() {
			tool := c.Tool(name)
			args := json.RawMessage(`{"a":[{"b":1}],"lines":[{"x":""}]}`)
			if b, err := tool.Bind(args, emptyScope{}); err == nil {
				_ = tool.KeyFor(b.Args)
			}
			_ = tool.Judge(src)
			_ = tool.Extract(args, src)
		}
	})
}
