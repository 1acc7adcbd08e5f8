// Package contract models a skill's skill_contract: the deterministic half of
// the runtime that tells guards and the loop where a parameter's value comes
// from, when a tool call succeeded, and when a node may finish.
//
// The package covers, after CONTRACT_SPEC:
//
//   - parsing (§19): JSON with // and /* */ comments, unknown keys ignored,
//     "" meaning "not configured", case-sensitive enums, every spec default;
//   - load validation (§16): rules 1–13 plus Warden's own rules (W1…), each
//     reported as a *LoadError naming the skill_key, the JSON path and the
//     rule, and advisory warnings (P1…);
//   - value expressions (§7, §9) and their evaluation against a Scope the loop
//     implements;
//   - parameter paths such as lines[].goodsCode and argument binding (§5);
//   - business success, error extraction, extracts and entities (§6);
//   - the skill store of §1.1 and a loader that parses each contract once per
//     content hash;
//   - the canonical JSON form and the idempotency key of §14.2.
//
// Nothing here performs I/O apart from DirStore, which reads a directory of
// table files; the loop supplies runtime state through the Scope interface.
package contract
