package scripted

import (
	"encoding/json"
	"fmt"
)

// Handler is a tool's normal behaviour. A returned error is the tool's own
// failure and becomes a Response with IsError and the error's text.
type Handler func(st *State, args json.RawMessage) (json.RawMessage, error)

// ok wraps data in the envelope {"code":200,"msg":"ok","data":…}.
func ok(data any) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"code": 200, "msg": "ok", "data": data})
}

// Fixed answers body on every call.
func Fixed(body string) Handler {
	return func(*State, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(body), nil }
}

// Create stores the arguments as a new record of coll, with idField set to a
// fresh id (prefix-N), and answers the record in the ok envelope.
func Create(coll, prefix, idField string) Handler {
	return func(st *State, args json.RawMessage) (json.RawMessage, error) {
		rec := map[string]any{}
		if len(args) > 0 {
			if err := json.Unmarshal(args, &rec); err != nil {
				return nil, fmt.Errorf("arguments are not a JSON object: %w", err)
			}
		}
		id := st.NextID(prefix)
		rec[idField] = id
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		st.Put(coll, id, b)
		return ok(json.RawMessage(b))
	}
}

// Get answers the record of coll whose id is the argument idField in the ok
// envelope, or the business failure {"code":404,"msg":"<id> not found",
// "data":null}.
func Get(coll, idField string) Handler {
	return func(st *State, args json.RawMessage) (json.RawMessage, error) {
		var in map[string]any
		_ = json.Unmarshal(args, &in)
		id, _ := in[idField].(string)
		rec, found := st.Get(coll, id)
		if !found {
			return json.Marshal(map[string]any{"code": 404, "msg": id + " not found", "data": nil})
		}
		return ok(rec)
	}
}

// List answers every record of coll as {"items":[…],"total":n} in the ok
// envelope.
func List(coll string) Handler {
	return func(st *State, _ json.RawMessage) (json.RawMessage, error) {
		items := st.List(coll)
		return ok(map[string]any{"items": items, "total": len(items)})
	}
}
