package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"
)

func checkPlugin(p PluginRecord) error {
	if p.Tenant == "" || p.Name == "" || p.Version == "" || p.Digest == "" || p.Role == "" || len(p.Module) == 0 {
		return fmt.Errorf("store: put plugin: tenant, name, version, digest, role and module are required: %w", ErrInvalid)
	}
	return checkDoc("put plugin "+p.Name, p.Manifest)
}

func clonePlugin(p PluginRecord, module bool) PluginRecord {
	p.Manifest, p.Grant = slices.Clone(p.Manifest), slices.Clone(p.Grant)
	if module {
		p.Module = slices.Clone(p.Module)
	} else {
		p.Module = nil
	}
	return p
}

// PutPlugin stores a plugin version (Registry).
func (m *Memory) PutPlugin(_ context.Context, p PluginRecord) (bool, error) {
	if err := checkPlugin(p); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.plugins {
		if q.Tenant == p.Tenant && q.Name == p.Name && q.Version == p.Version {
			if q.Digest == p.Digest {
				return false, nil
			}
			return false, fmt.Errorf("store: plugin %s@%s is installed with sha256 %s: %w", p.Name, p.Version, q.Digest, ErrConflict)
		}
	}
	p = clonePlugin(p, true)
	p.Installed = p.Installed.UTC().Truncate(time.Millisecond)
	m.plugins = append(m.plugins, p)
	return true, nil
}

// Plugins lists a tenant's plugin versions (Registry).
func (m *Memory) Plugins(_ context.Context, tenant string) ([]PluginRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []PluginRecord{}
	for _, p := range m.plugins {
		if p.Tenant == tenant {
			out = append(out, clonePlugin(p, false))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// PluginModule returns a tenant's module by digest (Registry).
func (m *Memory) PluginModule(_ context.Context, tenant, digest string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.plugins {
		if p.Tenant == tenant && p.Digest == digest {
			return slices.Clone(p.Module), nil
		}
	}
	return nil, fmt.Errorf("store: plugin module %s of %s: %w", digest, tenant, ErrNotFound)
}

// DeletePlugin removes every version of a tenant's plugin (Registry).
func (m *Memory) DeletePlugin(_ context.Context, tenant, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.plugins)
	m.plugins = slices.DeleteFunc(m.plugins, func(p PluginRecord) bool { return p.Tenant == tenant && p.Name == name })
	if len(m.plugins) == n {
		return fmt.Errorf("store: plugin %s of %s: %w", name, tenant, ErrNotFound)
	}
	return nil
}

// PutSkill inserts or replaces a tenant's skill (Registry).
func (m *Memory) PutSkill(_ context.Context, s SkillRecord) (bool, error) {
	if s.Tenant == "" || s.Key == "" {
		return false, fmt.Errorf("store: put skill: tenant and key are required: %w", ErrInvalid)
	}
	if err := checkDoc("put skill "+s.Key, s.Doc); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.skills == nil {
		m.skills = map[string]map[string]SkillRecord{}
	}
	if m.skills[s.Tenant] == nil {
		m.skills[s.Tenant] = map[string]SkillRecord{}
	}
	_, had := m.skills[s.Tenant][s.Key]
	s.Doc = slices.Clone(s.Doc)
	s.Updated = s.Updated.UTC().Truncate(time.Millisecond)
	m.skills[s.Tenant][s.Key] = s
	return !had, nil
}

// Skills lists a tenant's skills by key (Registry).
func (m *Memory) Skills(_ context.Context, tenant string) ([]SkillRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []SkillRecord{}
	for _, s := range m.skills[tenant] {
		s.Doc = slices.Clone(s.Doc)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// DeleteSkill removes a tenant's skill (Registry).
func (m *Memory) DeleteSkill(_ context.Context, tenant, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.skills[tenant][key]; !ok {
		return fmt.Errorf("store: skill %s of %s: %w", key, tenant, ErrNotFound)
	}
	delete(m.skills[tenant], key)
	return nil
}
