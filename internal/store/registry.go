package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Registry sentinels.
var (
	// ErrConflict: a plugin version is already installed with another
	// module (a ref names one module for good).
	ErrConflict = errors.New("store: conflicts with what is stored")
)

// PluginRecord is one version of a tenant's plugin module: the module, its
// digest and manifest, the capabilities it was granted and who installed
// it when. A tenant's plugin is named by its manifest's name; each version
// is kept until the plugin is deleted.
type PluginRecord struct {
	Tenant  string
	Name    string
	Version string
	// Digest is the hex sha256 of Module.
	Digest string
	// Role is the manifest's role (guard, builtin).
	Role string
	// Manifest is the module's manifest as the host read it.
	Manifest json.RawMessage
	// Grant is the capabilities the module is loaded with: what its
	// manifest asked for, within the tenant's allow-list.
	Grant []string
	// Module is the .wasm module; listings leave it out.
	Module []byte
	// InstalledBy names who installed it: "tenant" (its own key) or
	// "admin".
	InstalledBy string
	Installed   time.Time
}

// SkillRecord is one of a tenant's skills as uploaded through the API: the
// service's JSON document (profile, manual, contract, toolNames, status),
// kept as given.
type SkillRecord struct {
	Tenant string
	Key    string
	Doc    json.RawMessage
	// UpdatedBy names who uploaded it: "tenant" or "admin".
	UpdatedBy string
	Updated   time.Time
}

// Registry keeps each tenant's plugin modules and skills, so that every
// instance sharing the store serves the same ones. Memory and sqlstore's
// DB implement it; storetest.RunRegistry is their conformance suite.
type Registry interface {
	// PutPlugin stores a plugin version. The same version with the same
	// digest again changes nothing and reports false; with another digest
	// it is ErrConflict. A new version reports true.
	PutPlugin(ctx context.Context, p PluginRecord) (bool, error)
	// Plugins lists a tenant's plugin versions, without their modules, by
	// name then installation order.
	Plugins(ctx context.Context, tenant string) ([]PluginRecord, error)
	// PluginModule returns a tenant's module by digest, ErrNotFound when
	// the tenant has none with that digest.
	PluginModule(ctx context.Context, tenant, digest string) ([]byte, error)
	// DeletePlugin removes every version of a tenant's plugin,
	// ErrNotFound when it has none.
	DeletePlugin(ctx context.Context, tenant, name string) error

	// PutSkill inserts or replaces a tenant's skill; true when it is new.
	PutSkill(ctx context.Context, s SkillRecord) (bool, error)
	// Skills lists a tenant's skills by key.
	Skills(ctx context.Context, tenant string) ([]SkillRecord, error)
	// DeleteSkill removes a tenant's skill, ErrNotFound when there is none.
	DeleteSkill(ctx context.Context, tenant, key string) error
}
