package host

import (
	"encoding/json"
	"unsafe"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
	"github.com/tidwall/gjson"
)

// envMember is one member of an envelope's common part, indexed once per
// Set for every guard of the phase and shared with each guard's index
// (services.Members.AddShared). Firm says V is in the request's own raw
// field, not in enc.
type envMember = services.Member

// MembersFor indexes in m the envelope AppendFor made for one guard (req,
// with config and manifest mf), from the parts it was made of instead of a
// pass over req: the common members indexed once per Set, the guard's
// config, the views it was granted and the response. The large members
// (contract, schemas, arguments, views, response) are indexed in the
// request's own bytes, which outlive the call, so an answer read from them
// needs no copy (services.Members.Stable).
func (e *Envelope) MembersFor(m *services.Members, req []byte, config json.RawMessage, mf *abi.Manifest) {
	e.membersFor(m, req, config, mf.Capabilities)
}

// membersFor is MembersFor for a guard granted grant (appendFor's).
func (e *Envelope) membersFor(m *services.Members, req []byte, config json.RawMessage, grant []abi.Capability) {
	if !e.spliced {
		m.Reset(req)
		return
	}
	if !e.indexed {
		e.index()
	}
	m.SetParts(req)
	m.AddShared(e.common) // no key of it is added below: config, state and response are not in enc
	if len(config) > 0 {
		m.Add(abi.FieldConfig, services.Value(config), true)
	}
	for i, k := range e.keys {
		if !ViewGranted(k, grant) {
			continue
		}
		m.StateMember()
		if len(e.views[i]) > 0 {
			m.AddView(k, services.Value(e.views[i]))
		}
	}
	if len(e.response) > 0 {
		m.Add(abi.FieldResponse, services.Value(e.response), true)
	}
}

// index indexes the common part of the envelope, enc: from its layout
// when enc is the one abi.Request.AppendJSON writes (checked byte for
// byte), by one pass over it otherwise.
func (e *Envelope) index() {
	e.indexed = true
	if e.indexLayout() {
		return
	}
	e.common = e.common[:0]
	e.enc = append(e.enc, '}')
	e.scan(e.enc, func(c *envMember) {
		if src := e.rawField(c.Key); c.V.Type == gjson.JSON && src != nil {
			if sv := services.Value(src); sv.Raw == c.V.Raw {
				c.V, c.Firm = sv, true
			}
		}
	})
	e.enc = e.enc[:len(e.enc)-1]
}

// scan indexes the members of the object doc, each passed to fix first.
func (e *Envelope) scan(doc []byte, fix func(c *envMember)) {
	gjson.Parse(unsafe.String(unsafe.SliceData(doc), len(doc))).ForEach(func(k, v gjson.Result) bool {
		e.common = append(e.common, envMember{Key: k.Str, V: v})
		if fix != nil {
			fix(&e.common[len(e.common)-1])
		}
		return true
	})
}

// layoutTail are the raw members AppendJSON writes after the result, in
// the reverse of its order.
var layoutTail = []string{abi.FieldArgs, abi.FieldBound, abi.FieldOutSchema, abi.FieldSchema, abi.FieldContract}

// indexLayout indexes enc without a pass over its large members: they are
// the request's raw fields, found at the end of enc in AppendJSON's order
// and compared with it byte for byte; what precedes them is the result,
// and the head is small enough to scan. It reports false, having indexed
// nothing that counts, when enc is not laid out so.
func (e *Envelope) indexLayout() bool {
	if e.req.ArgsText != "" || e.headLen <= 0 || e.headLen > len(e.enc) {
		return false
	}
	e.common = e.common[:0]
	end := len(e.enc)
	for _, key := range layoutTail {
		raw := e.rawField(key)
		if len(raw) == 0 {
			continue
		}
		start := end - len(raw) - len(key) - 4 // ,"key":
		if start < e.headLen || string(e.enc[start:start+2]) != `,"` || string(e.enc[start+2:start+2+len(key)]) != key ||
			string(e.enc[start+2+len(key):start+4+len(key)]) != `":` || string(e.enc[start+4+len(key):end]) != string(raw) {
			return false
		}
		e.common = append(e.common, envMember{Key: key, V: services.Value(raw), Firm: true})
		end = start
	}
	rest := e.enc[e.headLen:end]
	if r := e.req.Result; r != nil && r.Outcome.Valid() {
		const prefix = `,"result":`
		if len(rest) < len(prefix)+2 || string(rest[:len(prefix)]) != prefix || rest[len(prefix)] != '{' || rest[len(rest)-1] != '}' {
			return false
		}
		v := rest[len(prefix):]
		e.common = append(e.common, envMember{Key: abi.FieldResult, V: gjson.Result{Type: gjson.JSON, Raw: unsafe.String(unsafe.SliceData(v), len(v))}})
	} else if len(rest) > 0 {
		return false
	}
	e.head = append(append(e.head[:0], e.enc[:e.headLen]...), '}')
	e.scan(e.head, nil)
	return true
}

// rawField is the request's raw field encoded under key, if any.
func (e *Envelope) rawField(key string) json.RawMessage {
	switch key {
	case abi.FieldContract:
		return e.req.Contract
	case abi.FieldSchema:
		return e.req.Schema
	case abi.FieldOutSchema:
		return e.req.OutputSchema
	case abi.FieldBound:
		return e.req.Bound
	case abi.FieldArgs:
		return e.req.Args
	}
	return nil
}
