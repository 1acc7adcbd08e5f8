package rules

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/abi"
	"github.com/tidwall/gjson"
)

// The state views are decoded with gjson rather than encoding/json: inside
// a wasm guest, reflection-driven decoding costs about ten times what it
// does natively, which made one builtin_node_finish take over a millisecond.
// The decoders below fill the same abi types for every view the host
// builds; anything they do not expect (a value of another JSON type, a
// field spelt in another case, an integer that is not one) makes View fall
// back to encoding/json on the whole view, so a malformed view fails with
// encoding/json's own error, as before.

// dec collects whether a decode met only what it expects.
type dec struct{ bad bool }

func (d *dec) str(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Null:
		return ""
	}
	d.bad = true
	return ""
}

func (d *dec) boolean(v gjson.Result) bool {
	switch v.Type {
	case gjson.True:
		return true
	case gjson.False, gjson.Null:
		return false
	}
	d.bad = true
	return false
}

func (d *dec) integer(v gjson.Result) int {
	switch v.Type {
	case gjson.Number:
		n, err := strconv.Atoi(v.Raw)
		if err != nil {
			d.bad = true
		}
		return n
	case gjson.Null:
		return 0
	}
	d.bad = true
	return 0
}

func (d *dec) outcome(v gjson.Result) abi.Outcome {
	if v.Type != gjson.String {
		d.bad = true
		return 0
	}
	o, err := abi.ParseOutcome(v.Str)
	if err != nil {
		d.bad = true
	}
	return o
}

func (d *dec) raw(v gjson.Result) json.RawMessage { return json.RawMessage(v.Raw) }

func (d *dec) strs(v gjson.Result) []string {
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsArray() {
		d.bad = true
		return nil
	}
	out := []string{}
	v.ForEach(func(_, e gjson.Result) bool {
		out = append(out, d.str(e))
		return !d.bad
	})
	return out
}

func (d *dec) raws(v gjson.Result) map[string]json.RawMessage {
	if v.Type == gjson.Null {
		return nil
	}
	m := map[string]json.RawMessage{}
	d.object(v, nil, func(k string, e gjson.Result) bool { m[k] = d.raw(e); return true })
	return m
}

// array calls f for each element of v (nothing for null).
func (d *dec) array(v gjson.Result, f func(e gjson.Result)) {
	if v.Type == gjson.Null {
		return
	}
	if !v.IsArray() {
		d.bad = true
		return
	}
	v.ForEach(func(_, e gjson.Result) bool {
		f(e)
		return !d.bad
	})
}

// object calls f for each member of v (nothing for null). f reports whether
// it knew the key; an unknown key that differs from one of known only in
// case is what encoding/json would match, so it is not decoded here.
func (d *dec) object(v gjson.Result, known []string, f func(k string, e gjson.Result) bool) {
	if v.Type == gjson.Null {
		return
	}
	if !v.IsObject() {
		d.bad = true
		return
	}
	v.ForEach(func(k, e gjson.Result) bool {
		if !f(k.Str, e) {
			for _, n := range known {
				if strings.EqualFold(n, k.Str) {
					d.bad = true
				}
			}
		}
		return !d.bad
	})
}

// decodeView fills dst, a pointer to one of the abi view types, from v.
// It reports false when v holds something only encoding/json can judge.
func decodeView(v gjson.Result, dst any) bool {
	var d dec
	switch x := dst.(type) {
	case *abi.NodeView:
		d.node(v, x)
	case *abi.EvidenceView:
		d.object(v, []string{"items"}, func(k string, e gjson.Result) bool {
			if k != "items" {
				return false
			}
			x.Items = nil
			d.array(e, func(e gjson.Result) {
				var it abi.EvidenceItem
				d.evidenceItem(e, &it)
				x.Items = append(x.Items, it)
			})
			return true
		})
	case *abi.LedgerView:
		d.ledger(v, x)
	case *abi.ApprovalView:
		d.approval(v, x)
	case *abi.FollowUpView:
		d.object(v, []string{"current", "answered"}, func(k string, e gjson.Result) bool {
			switch k {
			case "current":
				x.Current = nil
				if e.Type != gjson.Null {
					x.Current = &abi.FollowUp{}
					d.followUp(e, x.Current)
				}
			case "answered":
				x.Answered = nil
				d.array(e, func(e gjson.Result) {
					var f abi.FollowUp
					d.followUp(e, &f)
					x.Answered = append(x.Answered, f)
				})
			default:
				return false
			}
			return true
		})
	case *abi.ConversationView:
		d.object(v, []string{"userMessages"}, func(k string, e gjson.Result) bool {
			if k != "userMessages" {
				return false
			}
			x.UserMessages = d.strs(e)
			return true
		})
	case *abi.EntitiesView:
		d.object(v, []string{"entities"}, func(k string, e gjson.Result) bool {
			if k != "entities" {
				return false
			}
			x.Entities = nil
			d.array(e, func(e gjson.Result) {
				var en abi.Entity
				d.entity(e, &en)
				x.Entities = append(x.Entities, en)
			})
			return true
		})
	default:
		return false
	}
	return !d.bad
}

var nodeFields = []string{"sessionId", "taskId", "nodeId", "status", "skillKey", "depth", "contract", "toolNames",
	"inputs", "outputs", "shared", "session", "platform", "scratch", "target", "targetClaimed", "doneTools",
	"lastBusiness", "outputsUsed", "skills", "delegatable", "delegateMaxDepth", "delegations", "reservedKeys"}

// node decodes a node view: one case per field of nodeFields, a flat list
// kept whole so that a field added to abi.NodeView has one place to go.
func (d *dec) node(v gjson.Result, n *abi.NodeView) {
	d.object(v, nodeFields, func(k string, e gjson.Result) bool {
		switch k {
		case "sessionId":
			n.SessionID = d.str(e)
		case "taskId":
			n.TaskID = d.str(e)
		case "nodeId":
			n.NodeID = d.str(e)
		case "status":
			n.Status = d.str(e)
		case "skillKey":
			n.SkillKey = d.str(e)
		case "depth":
			n.Depth = d.integer(e)
		case "contract":
			n.Contract = d.raw(e)
		case "toolNames":
			n.ToolNames = d.strs(e)
		case "inputs":
			n.Inputs = d.raws(e)
		case "outputs":
			n.Outputs = nil
			if e.Type != gjson.Null {
				n.Outputs = map[string]abi.OutputValue{}
			}
			d.object(e, nil, func(k string, e gjson.Result) bool {
				var o abi.OutputValue
				d.outputValue(e, &o)
				n.Outputs[k] = o
				return true
			})
		case "shared":
			n.Shared = d.raws(e)
		case "session":
			n.Session = d.raws(e)
		case "platform":
			n.Platform = d.raws(e)
		case "scratch":
			n.Scratch = d.raws(e)
		case "target":
			n.Target = d.str(e)
		case "targetClaimed":
			n.TargetClaimed = d.boolean(e)
		case "doneTools":
			n.DoneTools = d.strs(e)
		case "lastBusiness":
			n.LastBusiness = nil
			if e.Type != gjson.Null {
				s := &abi.CallSummary{}
				d.object(e, []string{"tool", "outcome", "empty", "businessOk"}, func(k string, e gjson.Result) bool {
					switch k {
					case "tool":
						s.Tool = d.str(e)
					case "outcome":
						s.Outcome = d.outcome(e)
					case "empty":
						s.Empty = d.boolean(e)
					case "businessOk":
						s.BusinessOK = d.boolean(e)
					default:
						return false
					}
					return true
				})
				n.LastBusiness = s
			}
		case "outputsUsed":
			n.OutputsUsed = d.boolean(e)
		case "skills":
			n.Skills = d.strs(e)
		case "delegatable":
			n.Delegatable = d.strs(e)
		case "delegateMaxDepth":
			n.DelegateMaxDepth = d.integer(e)
		case "delegations":
			n.Delegations = nil
			d.array(e, func(e gjson.Result) {
				var p abi.Delegation
				d.object(e, []string{"skillKey", "objective", "status"}, func(k string, e gjson.Result) bool {
					switch k {
					case "skillKey":
						p.SkillKey = d.str(e)
					case "objective":
						p.Objective = d.str(e)
					case "status":
						p.Status = d.str(e)
					default:
						return false
					}
					return true
				})
				n.Delegations = append(n.Delegations, p)
			})
		case "reservedKeys":
			n.ReservedKeys = d.strs(e)
		default:
			return false
		}
		return true
	})
}

func (d *dec) outputValue(v gjson.Result, o *abi.OutputValue) {
	d.object(v, []string{"value", "sourceType", "sourceRef", "sourcePath"}, func(k string, e gjson.Result) bool {
		switch k {
		case "value":
			o.Value = d.raw(e)
		case "sourceType":
			o.SourceType = d.str(e)
		case "sourceRef":
			o.SourceRef = d.str(e)
		case "sourcePath":
			o.SourcePath = d.str(e)
		default:
			return false
		}
		return true
	})
}

var evidenceFields = []string{"id", "sourceType", "locator", "retrievedAt", "toolCallId", "excerpt", "contentHash",
	"tool", "nodeId", "status", "businessOk", "result", "empty", "truncated", "size", "extracts", "counts", "values", "payload"}

func (d *dec) evidenceItem(v gjson.Result, it *abi.EvidenceItem) {
	d.object(v, evidenceFields, func(k string, e gjson.Result) bool {
		switch k {
		case "id":
			it.ID = d.str(e)
		case "sourceType":
			it.SourceType = d.str(e)
		case "locator":
			it.Locator = d.str(e)
		case "retrievedAt":
			it.RetrievedAt = d.str(e)
		case "toolCallId":
			it.ToolCallID = d.str(e)
		case "excerpt":
			it.Excerpt = d.str(e)
		case "contentHash":
			it.ContentHash = d.str(e)
		case "tool":
			it.Tool = d.str(e)
		case "nodeId":
			it.NodeID = d.str(e)
		case "status":
			it.Status = d.outcome(e)
		case "businessOk":
			it.BusinessOK = d.boolean(e)
		case "result":
			it.Result = d.str(e)
		case "empty":
			it.Empty = d.boolean(e)
		case "truncated":
			it.Truncated = d.boolean(e)
		case "size":
			it.Size = d.integer(e)
		case "extracts":
			it.Extracts = d.raws(e)
		case "counts":
			it.Counts = nil
			if e.Type != gjson.Null {
				it.Counts = map[string]int{}
			}
			d.object(e, nil, func(k string, e gjson.Result) bool { it.Counts[k] = d.integer(e); return true })
		case "values":
			it.Values = d.strs(e)
		case "payload":
			it.Payload = d.raw(e)
		default:
			return false
		}
		return true
	})
}

func (d *dec) ledger(v gjson.Result, l *abi.LedgerView) {
	d.object(v, []string{"entries", "bypassTools"}, func(k string, e gjson.Result) bool {
		switch k {
		case "entries":
			l.Entries = nil
			d.array(e, func(e gjson.Result) {
				var en abi.LedgerEntry
				d.ledgerEntry(e, &en)
				l.Entries = append(l.Entries, en)
			})
		case "bypassTools":
			l.BypassTools = d.strs(e)
		default:
			return false
		}
		return true
	})
}

var ledgerFields = []string{"tool", "key", "state", "argsDigest", "callId", "nodeId", "businessOk", "result", "approved", "updatedAt", "startedAt"}

func (d *dec) ledgerEntry(v gjson.Result, en *abi.LedgerEntry) {
	d.object(v, ledgerFields, func(k string, e gjson.Result) bool {
		switch k {
		case "tool":
			en.Tool = d.str(e)
		case "key":
			en.Key = d.str(e)
		case "state":
			en.State = abi.LedgerState(d.str(e))
		case "argsDigest":
			en.ArgsDigest = d.str(e)
		case "callId":
			en.CallID = d.str(e)
		case "nodeId":
			en.NodeID = d.str(e)
		case "businessOk":
			en.BusinessOK = nil
			if e.Type != gjson.Null {
				b := d.boolean(e)
				en.BusinessOK = &b
			}
		case "result":
			// The settled write's observation: no rule here reads it, and
			// its decoding belongs to abi.
			en.Result = nil
			if e.Type != gjson.Null {
				var o abi.Observation
				if err := json.Unmarshal([]byte(e.Raw), &o); err != nil {
					d.bad = true
				}
				en.Result = &o
			}
		case "approved":
			en.Approved = d.boolean(e)
		case "updatedAt":
			en.UpdatedAt = d.str(e)
		case "startedAt":
			en.StartedAt = d.str(e)
		default:
			return false
		}
		return true
	})
}

func (d *dec) approval(v gjson.Result, a *abi.ApprovalView) {
	d.object(v, []string{"gated", "approved"}, func(k string, e gjson.Result) bool {
		switch k {
		case "gated":
			a.Gated = nil
			if e.Type != gjson.Null {
				g := &abi.GatedCall{}
				d.object(e, []string{"tool", "callId", "args", "argsDigest", "at"}, func(k string, e gjson.Result) bool {
					switch k {
					case "tool":
						g.Tool = d.str(e)
					case "callId":
						g.CallID = d.str(e)
					case "args":
						g.Args = d.raw(e)
					case "argsDigest":
						g.ArgsDigest = d.str(e)
					case "at":
						g.At = d.str(e)
					default:
						return false
					}
					return true
				})
				a.Gated = g
			}
		case "approved":
			a.Approved = nil
			if e.Type != gjson.Null {
				p := &abi.ApprovedCall{}
				d.object(e, []string{"tool", "argsDigest", "approvedAt"}, func(k string, e gjson.Result) bool {
					switch k {
					case "tool":
						p.Tool = d.str(e)
					case "argsDigest":
						p.ArgsDigest = d.str(e)
					case "approvedAt":
						p.ApprovedAt = d.str(e)
					default:
						return false
					}
					return true
				})
				a.Approved = p
			}
		default:
			return false
		}
		return true
	})
}

func (d *dec) followUp(v gjson.Result, f *abi.FollowUp) {
	d.object(v, []string{"question", "expectedFields", "answer"}, func(k string, e gjson.Result) bool {
		switch k {
		case "question":
			f.Question = d.str(e)
		case "expectedFields":
			f.ExpectedFields = d.strs(e)
		case "answer":
			f.Answer = d.str(e)
		default:
			return false
		}
		return true
	})
}

func (d *dec) entity(v gjson.Result, en *abi.Entity) {
	d.object(v, []string{"type", "id", "name", "attrs", "taskId"}, func(k string, e gjson.Result) bool {
		switch k {
		case "type":
			en.Type = d.str(e)
		case "id":
			en.ID = d.str(e)
		case "name":
			en.Name = d.str(e)
		case "attrs":
			en.Attrs = d.raws(e)
		case "taskId":
			en.TaskID = d.str(e)
		default:
			return false
		}
		return true
	})
}
