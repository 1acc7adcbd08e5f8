package host

import (
	"encoding/json"
	"unsafe"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/services"
	"github.com/tidwall/gjson"
)

// envMember is one member of an envelope's common part, indexed once per
// Set for every guard of the phase.
type envMember struct {
	key  string
	v    gjson.Result
	firm bool // v is in the request's own raw field, not in enc
}

// MembersFor indexes in m the envelope AppendFor made for one guard (req,
// with config and manifest mf), from the parts it was made of instead of a
// pass over req: the common members indexed once per Set, the guard's
// config, the views it was granted and the response. The large members
// (contract, schemas, arguments, views, response) are indexed in the
// request's own bytes, which outlive the call, so an answer read from them
// needs no copy (services.Members.Stable).
func (e *Envelope) MembersFor(m *services.Members, req []byte, config json.RawMessage, mf *abi.Manifest) {
	if !e.spliced {
		m.Reset(req)
		return
	}
	if !e.indexed {
		e.index()
	}
	m.SetParts(req)
	for i := range e.common {
		c := &e.common[i]
		m.Add(c.key, c.v, c.firm)
	}
	if len(config) > 0 {
		m.Add(abi.FieldConfig, services.Value(config), true)
	}
	for i, k := range e.keys {
		if !ViewGranted(k, mf.Capabilities) {
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

// index indexes the common part of the envelope (enc, closed for the
// pass), pointing each large member at the request's own raw field.
func (e *Envelope) index() {
	e.indexed = true
	e.common = e.common[:0]
	e.enc = append(e.enc, '}')
	gjson.Parse(unsafe.String(unsafe.SliceData(e.enc), len(e.enc))).ForEach(func(k, v gjson.Result) bool {
		c := envMember{key: k.Str, v: v}
		if src := e.rawField(k.Str); v.Type == gjson.JSON && src != nil {
			if sv := services.Value(src); sv.Raw == v.Raw {
				c.v, c.firm = sv, true
			}
		}
		e.common = append(e.common, c)
		return true
	})
	e.enc = e.enc[:len(e.enc)-1]
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
