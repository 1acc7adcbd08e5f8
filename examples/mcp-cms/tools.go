package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// field is one argument of a tool: enough to write its JSON Schema and to
// check a call's arguments against it.
type field struct {
	name, typ, desc string
	required        bool
}

// toolDef is one CMS tool.
type toolDef struct {
	name, title, desc string
	write             bool
	fields            []field
	// data is the JSON Schema of the envelope's data on success.
	data string
	run  func(st *store, a args) (any, error)
}

type args map[string]any

func (a args) str(k string) string { s, _ := a[k].(string); return s }

func (a args) num(k string) int64 { n, _ := a[k].(int64); return n }

func (a args) flag(k string) bool { b, _ := a[k].(bool); return b }

const (
	websiteSchema = `{"type":"object","properties":{"websiteId":{"type":"string"},"spaceId":{"type":"string"},"name":{"type":"string"},"domain":{"type":"string"}},"required":["websiteId","spaceId","name","domain"]}`
	articleSchema = `{"type":"object","properties":{"articleId":{"type":"string"},"websiteId":{"type":"string"},"title":{"type":"string"},"body":{"type":"string"},"status":{"type":"string","enum":["draft","published"]}},"required":["articleId","websiteId","title","status"]}`
)

func listSchema(item string) string {
	return `{"type":"object","properties":{"items":{"type":"array","items":` + item + `},"total":{"type":"integer"}},"required":["items","total"]}`
}

// cmsTools are the business tools, reads first.
var cmsTools = []toolDef{
	{
		name: "query_space", title: "Query space", desc: "Look up a space by id, or by its exact name, and count its websites.",
		fields: []field{{"spaceId", "string", "space id, e.g. sp-1", false}, {"name", "string", "the space's exact name, when the id is not known", false}},
		data:   `{"type":"object","properties":{"spaceId":{"type":"string"},"name":{"type":"string"},"websiteCount":{"type":"integer"}},"required":["spaceId","name","websiteCount"]}`,
		run:    func(st *store, a args) (any, error) { return st.querySpace(a.str("spaceId"), a.str("name")) },
	},
	{
		name: "list_websites", title: "List websites", desc: "List the websites of a space.",
		fields: []field{{"spaceId", "string", "space id", true}},
		data:   listSchema(websiteSchema),
		run:    func(st *store, a args) (any, error) { return st.listWebsites(a.str("spaceId")) },
	},
	{
		name: "find_website", title: "Find website", desc: "Look up a website by its domain; none is a not-found failure.",
		fields: []field{{"domain", "string", "the website's domain", true}},
		data:   websiteSchema,
		run:    func(st *store, a args) (any, error) { return st.findWebsite(a.str("domain")) },
	},
	{
		name: "get_article", title: "Get article", desc: "Read one article by id.",
		fields: []field{{"articleId", "string", "article id, e.g. art-1", true}},
		data:   articleSchema,
		run:    func(st *store, a args) (any, error) { return st.getArticle(a.str("articleId")) },
	},
	{
		name: "search_articles", title: "Search articles", desc: "Find articles whose title or body contains the query (case-insensitive); an empty result is not a failure.",
		fields: []field{{"query", "string", "text to look for", true}, {"websiteId", "string", "only this website", false}},
		data:   listSchema(articleSchema),
		run:    func(st *store, a args) (any, error) { return st.searchArticles(a.str("query"), a.str("websiteId")) },
	},
	listTagsTool,
	{
		name: "create_website", title: "Create website", desc: "Create a website in a space. Domains are unique.", write: true,
		fields: []field{{"spaceId", "string", "space id", true}, {"name", "string", "display name", true}, {"domain", "string", "unique domain", true}},
		data:   websiteSchema,
		run: func(st *store, a args) (any, error) {
			return st.createWebsite(a.str("spaceId"), a.str("name"), a.str("domain"))
		},
	},
	{
		name: "create_article", title: "Create article", desc: "Create a draft article on a website. Titles are unique per website.", write: true,
		fields: []field{{"websiteId", "string", "website id", true}, {"title", "string", "title", true}, {"body", "string", "body text; may be empty", false}},
		data:   articleSchema,
		run: func(st *store, a args) (any, error) {
			return st.createArticle(a.str("websiteId"), a.str("title"), a.str("body"))
		},
	},
	{
		name: "publish_article", title: "Publish article", desc: "Publish a draft article. An article with an empty body is refused as a tool error.", write: true,
		fields: []field{{"articleId", "string", "article id", true}},
		data:   articleSchema,
		run:    func(st *store, a args) (any, error) { return st.publishArticle(a.str("articleId")) },
	},
}

// inputSchema is the JSON Schema of the fields.
func inputSchema(fs []field) json.RawMessage {
	props := map[string]any{}
	required := []string{}
	for _, f := range fs {
		props[f.name] = map[string]any{"type": f.typ, "description": f.desc}
		if f.required {
			required = append(required, f.name)
		}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	return b
}

// outputSchema is the envelope {code, msg, data} around the tool's data.
func outputSchema(data string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"code":{"type":"integer","description":"200 on success, 5xxxx on a business failure"},"msg":{"type":"string"},"data":{"anyOf":[` + data + `,{"type":"null"}]}},"required":["code","msg","data"]}`)
}

// parseArgs checks raw against the fields: no unknown keys, required keys
// present and non-empty, each value of its type.
func parseArgs(fs []field, raw json.RawMessage) (args, error) {
	in := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, fmt.Errorf("arguments must be a JSON object")
		}
	}
	known := map[string]field{}
	for _, f := range fs {
		known[f.name] = f
	}
	var unknown []string
	for k := range in {
		if _, ok := known[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown argument %s", strings.Join(unknown, ", "))
	}
	out := args{}
	for _, f := range fs {
		v, ok := in[f.name]
		if !ok || string(v) == "null" {
			if f.required {
				return nil, fmt.Errorf("%s is required", f.name)
			}
			continue
		}
		var err error
		switch f.typ {
		case "string":
			var s string
			if err = json.Unmarshal(v, &s); err == nil && f.required && strings.TrimSpace(s) == "" {
				return nil, fmt.Errorf("%s must not be empty", f.name)
			}
			out[f.name] = s
		case "integer":
			var n int64
			err = json.Unmarshal(v, &n)
			out[f.name] = n
		case "boolean":
			var b bool
			err = json.Unmarshal(v, &b)
			out[f.name] = b
		}
		if err != nil {
			return nil, fmt.Errorf("%s must be a %s", f.name, f.typ)
		}
	}
	return out, nil
}
