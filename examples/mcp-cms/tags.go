package main

// tag is one of the CMS's tags, under which articles are filed.
type tag struct {
	ID   string `json:"tagId"`
	Name string `json:"name"`
}

// tags are the CMS's tags: fixed, so no write changes them and a reset has
// nothing to put back.
var tags = []tag{
	{ID: "tag-1", Name: "news"},
	{ID: "tag-2", Name: "product"},
	{ID: "tag-3", Name: "engineering"},
}

const tagSchema = `{"type":"object","properties":{"tagId":{"type":"string"},"name":{"type":"string"}},"required":["tagId","name"]}`

// listTagsTool lists every tag, in id order.
var listTagsTool = toolDef{
	name: "list_tags", title: "List tags", desc: "List the tags articles can be filed under.",
	data: listSchema(tagSchema),
	run: func(*store, args) (any, error) {
		return map[string]any{"items": append([]tag(nil), tags...), "total": len(tags)}, nil
	},
}
