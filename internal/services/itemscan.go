package services

import (
	"encoding/binary"
	"sync"

	"github.com/agentwarden/warden/internal/jsonitems"
)

// lists keep their buffers between items answers.
var lists = sync.Pool{New: func() any { return new(jsonitems.List) }}

// scanItems is ItemsValue for an array or an object read in one pass over
// its bytes raw (jsonitems), appended to the answer's first 5 bytes in out;
// ok false on what is not JSON, which the caller lists with gjson.
func scanItems(out []byte, raw string, limit int) ([]byte, bool) {
	l := lists.Get().(*jsonitems.List)
	defer func() {
		l.Reset()
		lists.Put(l)
	}()
	if !l.Scan(raw, limit) {
		return nil, false
	}
	for i := range l.Len() {
		kind, raw, text := l.Item(i)
		out = appendListed(out, kind, raw, text)
		if kind == WalkObject {
			ms := l.Members(i)
			out = binary.LittleEndian.AppendUint32(out, uint32(len(ms)))
			for _, m := range ms {
				out = binary.LittleEndian.AppendUint32(out, uint32(len(m.Key)))
				out = append(out, m.Key...)
				out = appendListed(out, m.Kind, m.Raw, m.Text)
			}
		}
	}
	binary.LittleEndian.PutUint32(out[1:], uint32(l.Len()))
	return out, true
}

// appendListed appends one value of an items answer: kind, raw, text.
func appendListed(out []byte, kind byte, raw, text string) []byte {
	out = append(out, kind)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(raw)))
	out = append(out, raw...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(text)))
	return append(out, text...)
}
