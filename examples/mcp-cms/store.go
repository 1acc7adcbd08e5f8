package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Business codes in the response envelope.
const (
	codeOK        = 200
	codeNotFound  = 50001 // the space, website or article does not exist
	codeConflict  = 50002 // a website domain or article title is taken
	codeState     = 50003 // the article is not in a state that allows it
	codeInjected  = 50000 // a failure injected by the fault flags
	statusDraft   = "draft"
	statusPublish = "published"
)

type space struct {
	ID   string `json:"spaceId"`
	Name string `json:"name"`
}

type website struct {
	ID      string `json:"websiteId"`
	SpaceID string `json:"spaceId"`
	Name    string `json:"name"`
	Domain  string `json:"domain"`
}

type article struct {
	ID        string `json:"articleId"`
	WebsiteID string `json:"websiteId"`
	Title     string `json:"title"`
	Body      string `json:"body"`
	Status    string `json:"status"`
}

// store is the CMS state: maps of records behind one lock, so a read sees
// every write that returned before it.
type store struct {
	mu       sync.Mutex
	spaces   map[string]*space
	websites map[string]*website
	articles map[string]*article
	nextID   int
}

// failure is a business failure: a normal response whose code is not 200.
type failure struct {
	code int
	msg  string
}

func (f *failure) Error() string { return f.msg }

func newStore() *store {
	s := &store{}
	s.reset()
	return s
}

// reset puts back the seed data: two spaces, one website, one article.
func (s *store) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spaces = map[string]*space{
		"sp-1": {ID: "sp-1", Name: "Marketing"},
		"sp-2": {ID: "sp-2", Name: "Engineering"},
	}
	s.websites = map[string]*website{
		"ws-1": {ID: "ws-1", SpaceID: "sp-1", Name: "Main site", Domain: "example.com"},
	}
	s.articles = map[string]*article{
		"art-1": {ID: "art-1", WebsiteID: "ws-1", Title: "Hello", Body: "First post.", Status: statusPublish},
	}
	s.nextID = 1
}

func (s *store) id(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s-%d", prefix, s.nextID)
}

// querySpace looks a space up by id, or by its exact name when no id is
// given.
func (s *store) querySpace(id, name string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" && name == "" {
		return nil, &failure{codeNotFound, "give spaceId or name"}
	}
	sp, ok := s.spaces[id]
	if id == "" {
		for _, c := range s.spaces {
			if c.Name == name {
				sp, ok = c, true
			}
		}
		id = name
	}
	if !ok {
		return nil, &failure{codeNotFound, "space " + id + " not found"}
	}
	n := 0
	for _, w := range s.websites {
		if w.SpaceID == sp.ID {
			n++
		}
	}
	return map[string]any{"spaceId": sp.ID, "name": sp.Name, "websiteCount": n}, nil
}

func (s *store) listWebsites(spaceID string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.spaces[spaceID]; !ok {
		return nil, &failure{codeNotFound, "space " + spaceID + " not found"}
	}
	items := []website{}
	for _, w := range s.websites {
		if w.SpaceID == spaceID {
			items = append(items, *w)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].ID < items[j].ID })
	return map[string]any{"items": items, "total": len(items)}, nil
}

func (s *store) findWebsite(domain string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.websites {
		if w.Domain == domain {
			return *w, nil
		}
	}
	return nil, &failure{codeNotFound, "no website with domain " + domain}
}

func (s *store) getArticle(id string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.articles[id]
	if !ok {
		return nil, &failure{codeNotFound, "article " + id + " not found"}
	}
	return *a, nil
}

func (s *store) searchArticles(query, websiteID string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []article{}
	q := strings.ToLower(query)
	for _, a := range s.articles {
		if websiteID != "" && a.WebsiteID != websiteID {
			continue
		}
		if strings.Contains(strings.ToLower(a.Title), q) || strings.Contains(strings.ToLower(a.Body), q) {
			items = append(items, *a)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].ID < items[j].ID })
	return map[string]any{"items": items, "total": len(items)}, nil
}

func (s *store) createWebsite(spaceID, name, domain string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.spaces[spaceID]; !ok {
		return nil, &failure{codeNotFound, "space " + spaceID + " not found"}
	}
	for _, w := range s.websites {
		if w.Domain == domain {
			return nil, &failure{codeConflict, "domain " + domain + " is taken by " + w.ID}
		}
	}
	w := &website{ID: s.id("ws"), SpaceID: spaceID, Name: name, Domain: domain}
	s.websites[w.ID] = w
	return *w, nil
}

func (s *store) createArticle(websiteID, title, body string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.websites[websiteID]; !ok {
		return nil, &failure{codeNotFound, "website " + websiteID + " not found"}
	}
	for _, a := range s.articles {
		if a.WebsiteID == websiteID && a.Title == title {
			return nil, &failure{codeConflict, "title " + title + " is taken by " + a.ID}
		}
	}
	a := &article{ID: s.id("art"), WebsiteID: websiteID, Title: title, Body: body, Status: statusDraft}
	s.articles[a.ID] = a
	return *a, nil
}

// errEmptyBody is the tool's own failure (MCP isError), not a business code:
// publishing needs a body.
var errEmptyBody = fmt.Errorf("article has an empty body and cannot be published")

func (s *store) publishArticle(id string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.articles[id]
	if !ok {
		return nil, &failure{codeNotFound, "article " + id + " not found"}
	}
	if a.Status == statusPublish {
		return nil, &failure{codeState, "article " + id + " is already published"}
	}
	if strings.TrimSpace(a.Body) == "" {
		return nil, errEmptyBody
	}
	a.Status = statusPublish
	return *a, nil
}
