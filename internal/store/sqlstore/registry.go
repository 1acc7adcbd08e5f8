package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

var _ store.Registry = (*DB)(nil)

// PutPlugin stores a tenant's plugin version (store.Registry): the same
// version with the same digest is no change, with another digest
// store.ErrConflict.
func (s *DB) PutPlugin(ctx context.Context, p store.PluginRecord) (bool, error) {
	if p.Tenant == "" || p.Name == "" || p.Version == "" || p.Digest == "" || p.Role == "" || len(p.Module) == 0 || !json.Valid(p.Manifest) {
		return false, fmt.Errorf("sqlstore: put plugin: tenant, name, version, digest, role, module and a JSON manifest are required: %w", store.ErrInvalid)
	}
	grants := p.Grant
	if grants == nil {
		grants = []string{}
	}
	g, err := json.Marshal(grants)
	if err != nil {
		return false, fmt.Errorf("sqlstore: put plugin %s: %w", p.Name, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlstore: put plugin %s: %w", p.Name, err)
	}
	defer tx.Rollback()
	if s.dialect == Postgres {
		// Two instances installing the same version one after the other.
		if _, err := tx.ExecContext(ctx, `LOCK TABLE tenant_plugins IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return false, fmt.Errorf("sqlstore: put plugin %s: %w", p.Name, err)
		}
	}
	var have string
	err = tx.QueryRowContext(ctx, s.rebind(`SELECT digest FROM tenant_plugins WHERE tenant = ? AND name = ? AND version = ?`),
		p.Tenant, p.Name, p.Version).Scan(&have)
	switch {
	case err == nil && have == p.Digest:
		return false, nil
	case err == nil:
		return false, fmt.Errorf("sqlstore: plugin %s@%s is installed with sha256 %s: %w", p.Name, p.Version, have, store.ErrConflict)
	case !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("sqlstore: put plugin %s: %w", p.Name, err)
	}
	const q = `INSERT INTO tenant_plugins (tenant, name, version, digest, role, manifest, grants, module, installed_by, installed_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if _, err := tx.ExecContext(ctx, s.rebind(q), text(p.Tenant), text(p.Name), text(p.Version), p.Digest, text(p.Role),
		string(p.Manifest), string(g), p.Module, text(p.InstalledBy), p.Installed.UTC().Truncate(time.Millisecond).Format(generationTime)); err != nil {
		return false, fmt.Errorf("sqlstore: put plugin %s: %w", p.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlstore: put plugin %s: %w", p.Name, err)
	}
	return true, nil
}

// Plugins lists a tenant's plugin versions without their modules
// (store.Registry).
func (s *DB) Plugins(ctx context.Context, tenant string) ([]store.PluginRecord, error) {
	const q = `SELECT tenant, name, version, digest, role, manifest, grants, installed_by, installed_at
    FROM tenant_plugins WHERE tenant = ? ORDER BY name, id`
	rows, err := s.db.QueryContext(ctx, s.rebind(q), tenant)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: plugins of %s: %w", tenant, err)
	}
	defer rows.Close()
	out := []store.PluginRecord{}
	for rows.Next() {
		var (
			p                    store.PluginRecord
			manifest, grants, at string
		)
		if err := rows.Scan(&p.Tenant, &p.Name, &p.Version, &p.Digest, &p.Role, &manifest, &grants, &p.InstalledBy, &at); err != nil {
			return nil, fmt.Errorf("sqlstore: plugins of %s: %w", tenant, err)
		}
		p.Manifest = json.RawMessage(manifest)
		if err := json.Unmarshal([]byte(grants), &p.Grant); err != nil {
			return nil, fmt.Errorf("sqlstore: plugins of %s: grants of %s: %w", tenant, p.Name, err)
		}
		if p.Installed, err = time.Parse(generationTime, at); err != nil {
			return nil, fmt.Errorf("sqlstore: plugins of %s: installed_at %q: %w", tenant, at, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: plugins of %s: %w", tenant, err)
	}
	return out, nil
}

// PluginModule returns a tenant's module by digest (store.Registry).
func (s *DB) PluginModule(ctx context.Context, tenant, digest string) ([]byte, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT module FROM tenant_plugins WHERE tenant = ? AND digest = ? ORDER BY id LIMIT 1`),
		tenant, digest).Scan(&b)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("sqlstore: plugin module %s of %s: %w", digest, tenant, store.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("sqlstore: plugin module %s of %s: %w", digest, tenant, err)
	}
	return b, nil
}

// DeletePlugin removes every version of a tenant's plugin (store.Registry).
func (s *DB) DeletePlugin(ctx context.Context, tenant, name string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM tenant_plugins WHERE tenant = ? AND name = ?`), tenant, name)
	if err != nil {
		return fmt.Errorf("sqlstore: delete plugin %s of %s: %w", name, tenant, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlstore: delete plugin %s of %s: %w", name, tenant, err)
	} else if n == 0 {
		return fmt.Errorf("sqlstore: plugin %s of %s: %w", name, tenant, store.ErrNotFound)
	}
	return nil
}

// PutSkill inserts or replaces a tenant's skill (store.Registry).
func (s *DB) PutSkill(ctx context.Context, r store.SkillRecord) (bool, error) {
	if r.Tenant == "" || r.Key == "" || !json.Valid(r.Doc) {
		return false, fmt.Errorf("sqlstore: put skill: tenant, key and a JSON document are required: %w", store.ErrInvalid)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlstore: put skill %s: %w", r.Key, err)
	}
	defer tx.Rollback()
	at := r.Updated.UTC().Truncate(time.Millisecond).Format(generationTime)
	res, err := tx.ExecContext(ctx, s.rebind(`UPDATE tenant_skills SET doc = ?, updated_by = ?, updated_at = ? WHERE tenant = ? AND skill_key = ?`),
		text(string(r.Doc)), text(r.UpdatedBy), at, text(r.Tenant), text(r.Key))
	if err != nil {
		return false, fmt.Errorf("sqlstore: put skill %s: %w", r.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlstore: put skill %s: %w", r.Key, err)
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO tenant_skills (tenant, skill_key, doc, updated_by, updated_at) VALUES (?, ?, ?, ?, ?)`),
			text(r.Tenant), text(r.Key), text(string(r.Doc)), text(r.UpdatedBy), at); err != nil {
			return false, fmt.Errorf("sqlstore: put skill %s: %w", r.Key, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlstore: put skill %s: %w", r.Key, err)
	}
	return n == 0, nil
}

// Skills lists a tenant's skills by key (store.Registry).
func (s *DB) Skills(ctx context.Context, tenant string) ([]store.SkillRecord, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT tenant, skill_key, doc, updated_by, updated_at FROM tenant_skills WHERE tenant = ? ORDER BY skill_key`), tenant)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: skills of %s: %w", tenant, err)
	}
	defer rows.Close()
	out := []store.SkillRecord{}
	for rows.Next() {
		var (
			r       store.SkillRecord
			doc, at string
		)
		if err := rows.Scan(&r.Tenant, &r.Key, &doc, &r.UpdatedBy, &at); err != nil {
			return nil, fmt.Errorf("sqlstore: skills of %s: %w", tenant, err)
		}
		r.Doc = json.RawMessage(doc)
		if r.Updated, err = time.Parse(generationTime, at); err != nil {
			return nil, fmt.Errorf("sqlstore: skills of %s: updated_at %q: %w", tenant, at, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: skills of %s: %w", tenant, err)
	}
	return out, nil
}

// DeleteSkill removes a tenant's skill (store.Registry).
func (s *DB) DeleteSkill(ctx context.Context, tenant, key string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM tenant_skills WHERE tenant = ? AND skill_key = ?`), tenant, key)
	if err != nil {
		return fmt.Errorf("sqlstore: delete skill %s of %s: %w", key, tenant, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlstore: delete skill %s of %s: %w", key, tenant, err)
	} else if n == 0 {
		return fmt.Errorf("sqlstore: skill %s of %s: %w", key, tenant, store.ErrNotFound)
	}
	return nil
}
