package guest

// ItemsView is what Items answers, read in place: each item's kind, raw
// JSON, text and members are decoded from the answer when asked, so that
// a guest going through the items once allocates only an index of where
// each item starts (Items decodes every member into a Member first). It
// reads an answer the way Items does: a cut or corrupted answer ends where
// it stops making sense.
type ItemsView struct {
	// Kind is the value's kind (WalkMissing when the path matches nothing).
	Kind byte
	b    string
	at   []int // where each item starts in b
}

// ItemsView is Items read in place.
func (c *Call) ItemsView(path string, limit int) ItemsView {
	return viewItems(c.r.items(path, limit))
}

func viewItems(b string) ItemsView {
	if len(b) < 5 {
		return ItemsView{}
	}
	v := ItemsView{Kind: b[0], b: b}
	n := le32(b, 1)
	v.at = make([]int, 0, min(n, len(b)/9))
	for i := 5; len(v.at) < n; {
		start := i
		iv, next, ok := itemValue(b, i)
		if !ok {
			break
		}
		i = next
		if iv.Kind == WalkObject {
			if i+4 > len(b) {
				break
			}
			i = eachMember(b, i, nil)
		}
		v.at = append(v.at, start)
	}
	return v
}

// eachMember goes through the member count and members at b[i:], calling
// fn (when not nil) with each, and says where they end.
func eachMember(b string, i int, fn func(key string, kind byte, raw, text string)) int {
	m := le32(b, i)
	i += 4
	for range m {
		k, next, ok := lenField(b, i)
		if !ok {
			break
		}
		mv, next, ok := itemValue(b, next)
		if !ok {
			break
		}
		i = next
		if fn != nil {
			fn(k, mv.Kind, mv.Raw, mv.Text)
		}
	}
	return i
}

// Len is the number of items.
func (v ItemsView) Len() int { return len(v.at) }

// Item is the i-th item's kind, raw JSON and text.
func (v ItemsView) Item(i int) (kind byte, raw, text string) {
	iv, _, _ := itemValue(v.b, v.at[i])
	return iv.Kind, iv.Raw, iv.Text
}

// EachMember calls fn with each member of the i-th item, an object's, in
// document order (none for an item that is not an object).
func (v ItemsView) EachMember(i int, fn func(key string, kind byte, raw, text string)) {
	iv, next, _ := itemValue(v.b, v.at[i])
	if iv.Kind == WalkObject && next+4 <= len(v.b) {
		eachMember(v.b, next, fn)
	}
}
