package store

import (
	"context"
	"time"
)

// GenerationEvent is what happened to a plugin slot.
type GenerationEvent string

// Generation events.
const (
	// GenerationInstalled: a candidate passed every check and serves.
	GenerationInstalled GenerationEvent = "installed"
	// GenerationRefused: a candidate failed (digest pin, compile, config,
	// start, fit, self-test); the serving generation stayed.
	GenerationRefused GenerationEvent = "refused"
	// GenerationRolledBack: the previous generation's module serves again,
	// as a new generation.
	GenerationRolledBack GenerationEvent = "rolled_back"
)

// GenerationRecord is one event of a slot's life: an install, a refused
// candidate or a rollback.
type GenerationRecord struct {
	Slot  string          `json:"slot"`
	Event GenerationEvent `json:"event"`
	// Number is the generation the event made serve; 0 for a refusal.
	Number uint64 `json:"number,omitempty"`
	// Ref is the plugin's name@version; empty when it never loaded.
	Ref string `json:"ref,omitempty"`
	// Digest is the hex sha256 of the module installed, refused or rolled
	// back to.
	Digest string `json:"digest"`
	// Reason is why a candidate was refused.
	Reason string `json:"reason,omitempty"`
	// Origin says where the candidate came from: admin (the admin API),
	// start (the plugin directory at start) or watch (a change found in it).
	Origin string `json:"origin"`
	// File is the module's file name in the plugin directory, if any.
	File string `json:"file,omitempty"`
	// Instance is the instance that acted.
	Instance string    `json:"instance,omitempty"`
	Time     time.Time `json:"time"`
}

// GenerationLog keeps the generation records of every slot, so that what
// served when, and what was refused and why, outlives the process and is
// shared by the instances of one store. sqlstore.DB implements it.
type GenerationLog interface {
	// RecordGeneration appends a record.
	RecordGeneration(ctx context.Context, r GenerationRecord) error
	// Generations lists a slot's records, oldest first.
	Generations(ctx context.Context, slot string) ([]GenerationRecord, error)
}
