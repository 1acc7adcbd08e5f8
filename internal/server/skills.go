package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/skillstore"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/tools"
)

// skillKeyRe is a skill_key: lowercase and dotted (CONTRACT_SPEC §1.2).
var skillKeyRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$`)

// Skill statuses an upload may give (§1.1: only ACTIVE ones load).
const (
	skillActive   = contract.StatusActive
	skillInactive = "INACTIVE"
)

// SkillUpload is the body of PUT /v1/skills/{skill_key}: a skill_profile
// row (§1.1) and its toolNames (the enabled skill_tool_binding rows).
type SkillUpload struct {
	SkillName    string `json:"skill_name"`
	SemanticDesc string `json:"semantic_desc,omitempty"`
	SkillManual  string `json:"skill_manual"`
	// SkillContract is the contract's text (JSON with comments).
	SkillContract string   `json:"skill_contract"`
	ToolNames     []string `json:"toolNames"`
	// Status is ACTIVE (the default) or INACTIVE (kept, not loaded).
	Status string `json:"status,omitempty"`
}

// SkillInfo is a tenant's skill as the API shows it.
type SkillInfo struct {
	SkillKey string `json:"skill_key"`
	SkillUpload
	// Source is "store" (uploaded through the API) or "files" (the
	// server's skill directory; an upload of the same key replaces it).
	Source string `json:"source"`
	// Guards are the tenant guard refs its contract attaches.
	Guards    []string   `json:"guards"`
	UpdatedBy string     `json:"updated_by,omitempty"`
	Updated   *time.Time `json:"updated,omitempty"`
}

// skillView is one skill in effect for a tenant, with its parsed contract
// when it parses.
type skillView struct {
	SkillInfo
	Key      string
	contract *contract.Contract
	// err is why its contract does not parse.
	err error
}

// fileAgent is the tenant's agent from Options.Agents; a tenant whose
// file skills are none (the registry holds them) still has its profile.
func (s *Server) fileAgent(ctx context.Context, tenant string) (Agent, error) {
	a, err := s.opt.Agents.Agent(ctx, tenant)
	if err != nil && !(errors.Is(err, contract.ErrNoSkills) && s.registry() != nil) {
		return Agent{}, err
	}
	return a, nil
}

// parser parses uploaded contracts, cached by key and text.
var parser = skillstore.NewLoader(nil, nil)

// skillViews lists the tenant's skills in effect: its file skills, each
// replaced by an uploaded skill of the same key, then the other uploaded
// ones, by key.
func (s *Server) skillViews(ctx context.Context, tenant string) ([]skillView, error) {
	a, err := s.fileAgent(ctx, tenant)
	if err != nil {
		s.log.Error("agent not loaded", "tenant", tenant, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeSetupFailed, "the tenant's agent could not be loaded")
	}
	var out []skillView
	for _, sk := range a.Skills {
		v := skillView{Key: sk.Profile.SkillKey, contract: sk.Contract}
		v.SkillInfo = SkillInfo{SkillKey: sk.Profile.SkillKey, Source: "files", SkillUpload: SkillUpload{
			SkillName: sk.Profile.SkillName, SemanticDesc: sk.Profile.SemanticDesc, SkillManual: sk.Profile.SkillManual,
			SkillContract: sk.Profile.SkillContract, ToolNames: slices.Clone(sk.ToolNames), Status: skillActive}}
		out = append(out, v)
	}
	reg := s.registry()
	if reg == nil {
		return finishViews(out), nil
	}
	recs, err := reg.Skills(ctx, tenant)
	if err != nil {
		s.log.Error("skills not read", "tenant", tenant, "err", err)
		return nil, fail(http.StatusInternalServerError, CodeInternal, "the skill store failed")
	}
	for _, rec := range recs {
		var up SkillUpload
		if err := json.Unmarshal(rec.Doc, &up); err != nil {
			s.log.Error("stored skill unreadable", "tenant", tenant, "skill", rec.Key, "err", err)
			continue
		}
		updated := rec.Updated
		v := skillView{Key: rec.Key, SkillInfo: SkillInfo{SkillKey: rec.Key, SkillUpload: up, Source: "store", UpdatedBy: rec.UpdatedBy, Updated: &updated}}
		v.contract, _, v.err = parser.Parse(rec.Key, []byte(up.SkillContract))
		if i := slices.IndexFunc(out, func(o skillView) bool { return o.Key == rec.Key }); i >= 0 {
			out[i] = v
		} else {
			out = append(out, v)
		}
	}
	return finishViews(out), nil
}

func finishViews(vs []skillView) []skillView {
	for i := range vs {
		vs[i].Guards = []string{}
		if vs[i].ToolNames == nil {
			vs[i].ToolNames = []string{}
		}
		if vs[i].contract != nil {
			for _, g := range vs[i].contract.Guards {
				vs[i].Guards = append(vs[i].Guards, g.Ref)
			}
		}
	}
	return vs
}

// loadSkills are the tenant's ACTIVE skills as they are now, each checked
// as an upload is (checkSkill); one that fails is dropped through drop,
// never half-loaded. strict makes a file skill's failure an error instead
// (the start's Check: the operator's own files must load).
func (s *Server) loadSkills(ctx context.Context, tenant string, listed []tools.Tool, strict bool, drop func(key string, problems []string)) (Agent, error) {
	a, err := s.fileAgent(ctx, tenant)
	if err != nil {
		return Agent{}, err
	}
	views, err := s.skillViews(ctx, tenant)
	if err != nil {
		return Agent{}, err
	}
	var recs []store.PluginRecord
	if reg := s.registry(); reg != nil {
		if recs, err = reg.Plugins(ctx, tenant); err != nil {
			return Agent{}, fmt.Errorf("server: plugins of %s: %w", tenant, err)
		}
	}
	out := Agent{Profile: a.Profile}
	for _, v := range views {
		if v.Status != skillActive {
			continue
		}
		sk := &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: v.Key, SkillName: v.SkillName, SemanticDesc: v.SemanticDesc,
			SkillManual: v.SkillManual, SkillContract: v.SkillContract, Status: v.Status}, Contract: v.contract, ToolNames: v.ToolNames}
		if v.Source == "files" {
			// The loader's own skill: its profile as loaded.
			for _, f := range a.Skills {
				if f.Profile.SkillKey == v.Key {
					sk = f
				}
			}
		}
		_, isLive := s.opt.Tools.(tools.Live)
		if probs := s.checkSkill(tenant, v.Key, sk, v.err, listed, recs, !strict && isLive); len(probs) > 0 {
			if strict && v.Source == "files" {
				return Agent{}, fmt.Errorf("server: skill %s: %s", v.Key, strings.Join(probs, "; "))
			}
			drop(v.Key, probs)
			continue
		}
		out.Skills = append(out.Skills, sk)
	}
	return out, nil
}

// checkSkill lists every problem of a skill for a tenant: its contract's
// load rules (§16) and Warden rules (W1–W9), its toolNames against the
// tools served, its tenant guard refs against the tenant's registry, and
// the chain they make.
//
// liveOK leaves out the tools no server lists now, for a provider whose
// tool lists change (tools.Live): at load such a tool is offered once a
// server lists it again; an upload still must name served tools.
func (s *Server) checkSkill(tenant, key string, sk *skillstore.Skill, parseErr error, listed []tools.Tool, recs []store.PluginRecord, liveOK bool) []string {
	var out []string
	if parseErr != nil {
		if ps := contract.Problems(parseErr); len(ps) > 0 {
			for _, p := range ps {
				line := "skill_contract"
				if p.Path != "" {
					line += "." + p.Path
				}
				out = append(out, fmt.Sprintf("%s: rule %s: %s", line, p.Rule, p.Message()))
			}
		} else {
			out = append(out, "skill_contract: "+parseErr.Error())
		}
	}
	served := map[string]bool{}
	for _, t := range listed {
		served[t.Name] = true
	}
	seen := map[string]bool{}
	for i, n := range sk.ToolNames {
		switch {
		case n == "":
			out = append(out, fmt.Sprintf("toolNames[%d]: empty", i))
		case seen[n]:
			out = append(out, fmt.Sprintf("toolNames[%d]: %s is listed twice", i, n))
		case strings.HasPrefix(n, "builtin_"):
			out = append(out, fmt.Sprintf("toolNames[%d]: %s is a builtin tool; builtins are always available and not listed (§1.2)", i, n))
		case !served[n] && !liveOK:
			out = append(out, fmt.Sprintf("toolNames[%d]: tool %s is not served by the agent's MCP servers", i, n))
		}
		seen[n] = true
	}
	if sk.Contract == nil {
		return out
	}
	out = append(out, s.refProblems(tenant, sk.Contract, recs)...)
	if len(out) > 0 {
		return out
	}
	if out = s.configProblems(context.Background(), tenant, key, sk.Contract, recs); len(out) > 0 {
		return out
	}
	if _, _, err := tools.ApplyHints(sk, listed); err != nil {
		out = append(out, "tool annotations: "+err.Error())
	}
	// Where the guards go: every position must anchor in the chain.
	var ps []chain.Placement
	for _, g := range sk.Contract.Guards {
		ps = append(ps, chain.Placement{Guard: posGuard{name: g.Ref}, Phase: abi.Phase(g.Phase), Position: g.Position})
	}
	if _, err := chain.New(s.guards(), ps, nil); err != nil {
		out = append(out, "guards: "+strings.TrimPrefix(err.Error(), "chain: "))
	}
	return out
}

// putSkill validates and stores one of the tenant's skills; it takes
// effect with the tenant's next message, on every instance.
func (s *Server) putSkill(w http.ResponseWriter, r *http.Request, tenant, by string) error {
	reg, err := s.registryOf()
	if err != nil {
		return err
	}
	if err := onlyQuery(r); err != nil {
		return err
	}
	key := r.PathValue("skill_key")
	if !skillKeyRe.MatchString(key) || len(key) > 128 {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "a skill_key is lowercase and dotted, like cms.article.lifecycle (at most 128 characters)")
	}
	var up SkillUpload
	if err := decode(w, r, maxBody, &up); err != nil {
		return err
	}
	if up.Status == "" {
		up.Status = skillActive
	}
	var probs []string
	switch {
	case up.Status != skillActive && up.Status != skillInactive:
		probs = append(probs, fmt.Sprintf("status: %q, want ACTIVE or INACTIVE", up.Status))
	}
	if strings.TrimSpace(up.SkillName) == "" {
		probs = append(probs, "skill_name: required")
	}
	if up.ToolNames == nil {
		up.ToolNames = []string{}
	}
	listed, err := s.opt.Tools.ListTools(r.Context())
	if err != nil {
		s.log.Error("tools not listed", "tenant", tenant, "err", err)
		return fail(http.StatusBadGateway, CodeToolsUnavailable, "the agent's MCP servers could not be listed")
	}
	recs, err := reg.Plugins(r.Context(), tenant)
	if err != nil {
		s.log.Error("plugins not read", "tenant", tenant, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the plugin store failed")
	}
	// An INACTIVE skill is kept and never loaded: it is how a skill that
	// does not load (a directory's, say) is turned off, so only an ACTIVE
	// one must load for the tenant.
	if up.Status == skillActive {
		c, _, perr := contract.Parse(key, []byte(up.SkillContract))
		sk := &skillstore.Skill{Profile: contract.SkillProfile{SkillKey: key, SkillName: up.SkillName, SemanticDesc: up.SemanticDesc,
			SkillManual: up.SkillManual, SkillContract: up.SkillContract, Status: up.Status}, Contract: c, ToolNames: up.ToolNames}
		probs = append(probs, s.checkSkill(tenant, key, sk, perr, listed, recs, false)...)
		if len(probs) == 0 {
			// What loads must also hold up: the kit's probes, with each
			// guard's config, before the skill can attach it.
			kp, err := s.guardKitProblems(r.Context(), c, recs)
			if err != nil {
				s.log.Error("plugin module not read", "tenant", tenant, "skill", key, "err", err)
				return fail(http.StatusInternalServerError, CodeInternal, "the plugin store failed")
			}
			probs = kp
		}
	}
	if len(probs) > 0 {
		return fail(http.StatusBadRequest, CodeSkillInvalid, fmt.Sprintf("skill %s: %d problem(s): %s", key, len(probs), strings.Join(probs, "; ")))
	}
	doc, err := json.Marshal(up)
	if err != nil {
		return fmt.Errorf("server: skill %s: %w", key, err)
	}
	added, err := reg.PutSkill(r.Context(), store.SkillRecord{Tenant: tenant, Key: key, Doc: doc, UpdatedBy: by, Updated: s.opt.Now()})
	if err != nil {
		s.log.Error("skill not stored", "tenant", tenant, "skill", key, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the skill store failed")
	}
	s.log.Info("tenant skill stored", "tenant", tenant, "skill", key, "by", by, "new", added)
	v, err := s.skillView(r.Context(), tenant, key)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if added {
		status = http.StatusCreated
	}
	writeJSON(w, status, v.SkillInfo)
	return nil
}

func (s *Server) skillView(ctx context.Context, tenant, key string) (skillView, error) {
	views, err := s.skillViews(ctx, tenant)
	if err != nil {
		return skillView{}, err
	}
	for _, v := range views {
		if v.Key == key {
			return v, nil
		}
	}
	return skillView{}, fail(http.StatusNotFound, CodeSkillNotFound, "no skill "+key)
}

func (s *Server) listSkills(w http.ResponseWriter, r *http.Request, tenant, _ string) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	views, err := s.skillViews(r.Context(), tenant)
	if err != nil {
		return err
	}
	out := make([]SkillInfo, 0, len(views))
	for _, v := range views {
		out = append(out, v.SkillInfo)
	}
	writeJSON(w, http.StatusOK, map[string]any{"skills": out})
	return nil
}

func (s *Server) getSkill(w http.ResponseWriter, r *http.Request, tenant, _ string) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	v, err := s.skillView(r.Context(), tenant, r.PathValue("skill_key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v.SkillInfo)
	return nil
}

// deleteSkill removes an uploaded skill and answers what it was; a skill of the server's skill
// directory is turned off by uploading it INACTIVE instead.
func (s *Server) deleteSkill(w http.ResponseWriter, r *http.Request, tenant, by string) error {
	reg, err := s.registryOf()
	if err != nil {
		return err
	}
	if err := onlyQuery(r); err != nil {
		return err
	}
	key := r.PathValue("skill_key")
	v, err := s.skillView(r.Context(), tenant, key)
	if err != nil {
		return err
	}
	if v.Source == "files" {
		return fail(http.StatusConflict, CodeSkillFromFiles,
			fmt.Sprintf("skill %s comes from the server's skill directory; upload it with status INACTIVE to turn it off", key))
	}
	switch err := reg.DeleteSkill(r.Context(), tenant, key); {
	case errors.Is(err, store.ErrNotFound):
		return fail(http.StatusNotFound, CodeSkillNotFound, "no skill "+key)
	case err != nil:
		s.log.Error("skill not deleted", "tenant", tenant, "skill", key, "err", err)
		return fail(http.StatusInternalServerError, CodeInternal, "the skill store failed")
	}
	s.log.Info("tenant skill deleted", "tenant", tenant, "skill", key, "by", by)
	writeJSON(w, http.StatusOK, v.SkillInfo)
	return nil
}
