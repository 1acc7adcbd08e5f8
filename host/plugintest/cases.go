package plugintest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentwarden/warden/abi"
	"sigs.k8s.io/yaml"
)

// CaseFile is a cases file: the config the plugin is tested with and the
// author's cases. `warden plugin test --cases FILE` reads one; a go test
// reads the same file with LoadCases and passes it to Run.
type CaseFile struct {
	// Config is the plugin's config (a JSON object), as a skill's
	// guards[].config or an install would give it; empty for none.
	Config json.RawMessage
	Cases  []Case
}

// fileCases is the file's shape.
type fileCases struct {
	Config json.RawMessage `json:"config,omitempty"`
	Cases  []fileCase      `json:"cases"`
}

// fileCase is one case as written: the request's fields and the verdict
// it wants.
type fileCase struct {
	Name         string                     `json:"name"`
	Tool         string                     `json:"tool"`
	Phase        abi.Phase                  `json:"phase,omitempty"`
	Args         json.RawMessage            `json:"args,omitempty"`
	ArgsText     string                     `json:"argsText,omitempty"`
	Bound        json.RawMessage            `json:"bound,omitempty"`
	Provenance   map[string]string          `json:"provenance,omitempty"`
	Contract     json.RawMessage            `json:"contract,omitempty"`
	Schema       json.RawMessage            `json:"schema,omitempty"`
	OutputSchema json.RawMessage            `json:"outputSchema,omitempty"`
	State        map[string]json.RawMessage `json:"state,omitempty"`
	Result       *abi.Observation           `json:"result,omitempty"`
	Response     json.RawMessage            `json:"response,omitempty"`
	Locale       abi.Locale                 `json:"locale,omitempty"`
	Want         string                     `json:"want"`
}

// LoadCases reads a cases file (YAML, or JSON when it starts with '{').
func LoadCases(path string) (CaseFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return CaseFile{}, fmt.Errorf("plugintest: %w: %w", ErrCases, err)
	}
	cf, err := ParseCases(b)
	if err != nil {
		return CaseFile{}, fmt.Errorf("plugintest: %s: %w", path, err)
	}
	return cf, nil
}

// ParseCases decodes a cases file and checks every case, refusing unknown
// keys. A file that starts with '{' is read as JSON, byte for byte (numbers
// and key order of args stay as written); anything else as YAML, whose
// values reach the plugin as their JSON equivalent. Every error wraps
// ErrCases and names the case.
func ParseCases(b []byte) (CaseFile, error) {
	var f fileCases
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return CaseFile{}, fmt.Errorf("%w: %w", ErrCases, err)
		}
		if dec.More() {
			return CaseFile{}, fmt.Errorf("%w: text after the JSON object", ErrCases)
		}
	} else if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return CaseFile{}, fmt.Errorf("%w: %w", ErrCases, err)
	}
	if len(f.Config) > 0 && !bytes.HasPrefix(bytes.TrimSpace(f.Config), []byte("{")) && string(f.Config) != "null" {
		return CaseFile{}, fmt.Errorf("%w: config must be an object", ErrCases)
	}
	if len(f.Cases) == 0 {
		return CaseFile{}, fmt.Errorf("%w: no cases", ErrCases)
	}
	cf := CaseFile{Config: f.Config}
	if string(cf.Config) == "null" {
		cf.Config = nil
	}
	var errs []error
	seen := map[string]bool{}
	for i, c := range f.Cases {
		bad := func(format string, a ...any) {
			name := c.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i+1)
			}
			errs = append(errs, fmt.Errorf("%w: case %s: %s", ErrCases, name, fmt.Sprintf(format, a...)))
		}
		switch {
		case strings.TrimSpace(c.Name) == "":
			bad("no name")
		case seen[c.Name]:
			bad("a second case of this name")
		}
		seen[c.Name] = true
		if c.Tool == "" {
			bad("no tool")
		}
		if c.Phase != "" && c.Phase != abi.PhaseBefore && c.Phase != abi.PhaseAfter {
			bad("phase %q: want before or after", c.Phase)
		}
		if c.Locale != "" && c.Locale != abi.LocaleZH && c.Locale != abi.LocaleEN {
			bad("locale %q: want %s or %s", c.Locale, abi.LocaleZH, abi.LocaleEN)
		}
		if len(c.Args) > 0 && c.ArgsText != "" {
			bad("both args and argsText")
		}
		if c.Result != nil {
			if err := c.Result.Validate(); err != nil {
				bad("result: %v", err)
			}
		}
		if c.Phase != abi.PhaseAfter && (c.Result != nil || len(c.Response) > 0) {
			bad("result and response are for the after phase")
		}
		want, err := parseWant(c.Want)
		if err != nil {
			bad("%v", err)
		}
		req := abi.Request{Phase: c.Phase, Tool: c.Tool, Args: c.Args, ArgsText: c.ArgsText, Bound: c.Bound, Provenance: c.Provenance,
			Contract: c.Contract, Schema: c.Schema, OutputSchema: c.OutputSchema, State: c.State, Result: c.Result, Response: c.Response,
			Locale: c.Locale}
		if len(req.Args) == 0 && req.ArgsText == "" {
			req.Args = json.RawMessage(`{}`)
		}
		if req.Phase == abi.PhaseAfter && req.Result == nil {
			// The business tool succeeded with this response.
			res := abi.Success("ok", req.Response)
			req.Result = &res
		}
		cf.Cases = append(cf.Cases, Case{Name: c.Name, Request: req, Want: want})
	}
	if len(errs) > 0 {
		return CaseFile{}, errors.Join(errs...)
	}
	return cf, nil
}

// parseWant reads a case's want: "pass", "any" (any valid result), an
// outcome ("SUCCESS", "REJECTED") or an outcome and a code: a registered
// one ("REJECTED ARG_REJECTED") or one the plugin declares, by its full
// name ("REJECTED domainguard:DOMAIN_BLOCKED") or its own
// ("REJECTED DOMAIN_BLOCKED").
func parseWant(s string) (Want, error) {
	f := strings.Fields(s)
	switch {
	case len(f) == 0:
		return Want{}, errors.New(`no want: give "pass", "any", an outcome, or an outcome and a code`)
	case len(f) == 1 && f[0] == "pass":
		return WantPass(), nil
	case len(f) == 1 && f[0] == "any":
		return Want{}, nil
	case len(f) > 2:
		return Want{}, fmt.Errorf("want %q: an outcome and at most one code", s)
	}
	o, err := abi.ParseOutcome(f[0])
	if err != nil {
		return Want{}, fmt.Errorf("want %q: %q is not pass, any or an outcome (SUCCESS, FAILED, REJECTED, DEFERRED)", s, f[0])
	}
	if len(f) == 1 {
		return Want{Outcome: o}, nil
	}
	if o == abi.OutcomeSuccess {
		return Want{}, fmt.Errorf("want %q: a SUCCESS has no code", s)
	}
	code, err := abi.ParseCode(f[1])
	if err == nil {
		return Want{Outcome: o, Code: code}, nil
	}
	// A code the plugin declares, as "<plugin>:<NAME>" or its bare NAME:
	// whether the manifest declares it is known once the plugin loads.
	if c := abi.Code(f[1]); c.IsPlugin() || abi.PluginCode("p", f[1]).IsPlugin() {
		return Want{Outcome: o, Code: c}, nil
	}
	return Want{}, fmt.Errorf("want %q: %q is neither a registered code nor a code name a plugin may declare", s, f[1])
}
