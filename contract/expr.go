package contract

import (
	"fmt"
	"slices"
	"strings"
)

// ExprKind is the prefix of a value expression (§9).
type ExprKind string

// Expression kinds.
const (
	ExprInputs   ExprKind = "inputs"
	ExprOutputs  ExprKind = "outputs"
	ExprShared   ExprKind = "shared"
	ExprSession  ExprKind = "session"
	ExprPrior    ExprKind = "prior"
	ExprPlatform ExprKind = "platform"
	ExprEvidence ExprKind = "evidence"
	ExprCall     ExprKind = "call" // only in verify.args
	// ExprUpstream is an inputs.*.from without a known prefix: the
	// same-named output of the nearest completed upstream node (§7).
	ExprUpstream ExprKind = "upstream"
)

// OpenPlatformFields are the platform fields an expression may read (§11).
var OpenPlatformFields = []string{"userId", "memberId", "name", "organId", "organName", "organType", "deptPath"}

// HiddenPlatformFields exist in the login identity but are never exposed (§11).
var HiddenPlatformFields = []string{"passportId", "clientId", "sessionType", "adminUser", "adminCompany"}

// IsPlatformField reports whether name is an open platform field, a reserved name (§8, §11).
func IsPlatformField(name string) bool { return slices.Contains(OpenPlatformFields, name) }

// Expr is a parsed value expression.
type Expr struct {
	Raw  string
	Kind ExprKind
	// Path is the data path for inputs, outputs, shared, session, call and
	// upstream, and the sub-path inside the extract for evidence ("" = the
	// whole extract). It may contain "[]" (array templates, §5.4).
	Path ParamPath
	// EntityType, EntityID and Attr are set for prior: prior.<type>[.<attr>]
	// or prior.<type:id>.<attr>; Attr "" means the display name.
	EntityType, EntityID, Attr string
	// Field is the platform field for platform.<field>.
	Field string
	// Key is the extract key for evidence.<key>[.<path>]; it ends at the first ".".
	Key string
}

// Source is the source type a value read by the expression is recorded with (§9).
func (e *Expr) Source() SourceType {
	switch e.Kind {
	case ExprInputs, ExprOutputs, ExprUpstream:
		return SourceNodeOutput
	case ExprShared:
		return SourceShared
	case ExprSession:
		return SourceSession
	case ExprPrior:
		return SourcePriorTask
	case ExprPlatform:
		return SourcePlatform
	case ExprEvidence:
		return SourceEvidence
	}
	return SourceContract
}

// String returns the expression as written.
func (e *Expr) String() string { return e.Raw }

// ParseExpr parses an args.*.from expression. An unknown prefix or an empty
// path wraps ErrExprPrefix (rule 2); a platform field that is not open wraps
// ErrPlatformField (rule 10). call. parses here; where it is allowed is the
// validator's business.
func ParseExpr(s string) (*Expr, error) {
	prefix, rest, ok := strings.Cut(s, ".")
	if !ok {
		return nil, fmt.Errorf("contract: expression %q: %w: want <prefix>.<path>", s, ErrExprPrefix)
	}
	e := &Expr{Raw: s, Kind: ExprKind(prefix)}
	switch e.Kind {
	case ExprInputs, ExprOutputs, ExprShared, ExprSession, ExprCall:
		p, err := ParseParamPath(rest)
		if err != nil {
			return nil, fmt.Errorf("contract: expression %q: %w: path %s", s, ErrExprPrefix, pathProblem(err))
		}
		e.Path = p
	case ExprPrior:
		head, attr, _ := strings.Cut(rest, ".")
		typ, id, hasID := strings.Cut(head, ":")
		if typ == "" || (hasID && id == "") {
			return nil, fmt.Errorf("contract: expression %q: %w: want prior.<type>[.<attr>] or prior.<type:id>.<attr>", s, ErrExprPrefix)
		}
		if strings.Contains(rest, ".") && attr == "" {
			return nil, fmt.Errorf("contract: expression %q: %w: empty attribute", s, ErrExprPrefix)
		}
		e.EntityType, e.EntityID, e.Attr = typ, id, attr
	case ExprPlatform:
		switch {
		case slices.Contains(OpenPlatformFields, rest):
			e.Field = rest
		case slices.Contains(HiddenPlatformFields, rest):
			return nil, fmt.Errorf("contract: expression %q: %w: %s is hidden", s, ErrPlatformField, rest)
		default:
			return nil, fmt.Errorf("contract: expression %q: %w: unknown field %q (open: %s)", s, ErrPlatformField, rest, strings.Join(OpenPlatformFields, ", "))
		}
	case ExprEvidence:
		key, sub, _ := strings.Cut(rest, ".")
		if key == "" {
			return nil, fmt.Errorf("contract: expression %q: %w: empty evidence key", s, ErrExprPrefix)
		}
		e.Key = key
		if sub != "" || strings.Contains(rest, ".") {
			p, err := ParseParamPath(sub)
			if err != nil {
				return nil, fmt.Errorf("contract: expression %q: %w: path %s", s, ErrExprPrefix, pathProblem(err))
			}
			e.Path = p
		}
	default:
		return nil, fmt.Errorf("contract: expression %q: %w: unknown prefix %q", s, ErrExprPrefix, prefix+".")
	}
	return e, nil
}

// ParseInputExpr parses an inputs.*.from expression (§7): the prefixes of
// ParseExpr, and any other text names the same-named upstream output.
func ParseInputExpr(s string) (*Expr, error) {
	prefix, _, _ := strings.Cut(s, ".")
	switch ExprKind(prefix) {
	case ExprInputs, ExprOutputs, ExprShared, ExprSession, ExprPrior, ExprPlatform, ExprEvidence, ExprCall:
		return ParseExpr(s)
	}
	return &Expr{Raw: s, Kind: ExprUpstream}, nil
}
