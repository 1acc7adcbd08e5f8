package client

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// Each typed call sends its method, path, query and body, and keeps the
// answer's status and body as the API sent them.
func TestCalls(t *testing.T) {
	t.Parallel()
	module := []byte("\x00asm")
	for _, tc := range []struct {
		name                   string
		call                   func(c *Client) (*Answer, error)
		method, uri, body, cfg string
	}{
		{"sessions", func(c *Client) (*Answer, error) {
			v, err := c.Sessions(context.Background(), Page{Limit: 5, After: "s1"})
			return ans(v, err)
		}, "GET", "/v1/sessions?after=s1&limit=5", "", ""},
		{"session", func(c *Client) (*Answer, error) { v, err := c.Session(context.Background(), "a/b"); return ans(v, err) },
			"GET", "/v1/sessions/a%2Fb", "", ""},
		{"new session", func(c *Client) (*Answer, error) { v, err := c.NewSession(context.Background()); return ans(v, err) },
			"POST", "/v1/sessions", "", ""},
		{"send", func(c *Client) (*Answer, error) {
			v, err := c.SendMessage(context.Background(), "s1", "hi", 2*time.Second)
			return ans(v, err)
		}, "POST", "/v1/sessions/s1/messages?wait=2s", `{"text":"hi"}`, ""},
		{"task", func(c *Client) (*Answer, error) {
			v, err := c.Task(context.Background(), "s1", "t1")
			return ans(v, err)
		},
			"GET", "/v1/sessions/s1/tasks/t1", "", ""},
		{"trace", func(c *Client) (*Answer, error) {
			v, err := c.Trace(context.Background(), "s1", "t1")
			return ans(v, err)
		},
			"GET", "/v1/sessions/s1/tasks/t1/trace", "", ""},
		{"follow-up", func(c *Client) (*Answer, error) {
			v, err := c.FollowUp(context.Background(), "s1", "t1", "42", 0)
			return ans(v, err)
		}, "POST", "/v1/sessions/s1/tasks/t1/follow-up", `{"answer":"42"}`, ""},
		{"verify by tool", func(c *Client) (*Answer, error) {
			v, err := c.Verify(context.Background(), "s1", "t1", nil, 0)
			return ans(v, err)
		}, "POST", "/v1/sessions/s1/tasks/t1/verify", `{}`, ""},
		{"verify took", func(c *Client) (*Answer, error) {
			v, err := c.Verify(context.Background(), "s1", "t1", new(false), 0)
			return ans(v, err)
		}, "POST", "/v1/sessions/s1/tasks/t1/verify", `{"took":false}`, ""},
		{"resume", func(c *Client) (*Answer, error) {
			v, err := c.Resume(context.Background(), "s1", "t1", time.Minute)
			return ans(v, err)
		}, "POST", "/v1/sessions/s1/tasks/t1/resume?wait=1m0s", "", ""},
		{"approvals", func(c *Client) (*Answer, error) {
			v, err := c.Approvals(context.Background(), Page{Status: "pending"})
			return ans(v, err)
		}, "GET", "/v1/approvals?status=PENDING", "", ""},
		{"approval", func(c *Client) (*Answer, error) {
			v, err := c.Approval(context.Background(), "ap1")
			return ans(v, err)
		},
			"GET", "/v1/approvals/ap1", "", ""},
		{"decide", func(c *Client) (*Answer, error) {
			v, err := c.Decide(context.Background(), "ap1", "CONFIRM", 0)
			return ans(v, err)
		}, "POST", "/v1/approvals/ap1", `{"decision":"CONFIRM"}`, ""},
		{"slots", func(c *Client) (*Answer, error) { v, err := c.Slots(context.Background()); return ans(v, err) },
			"GET", "/admin/v1/slots", "", ""},
		{"slot", func(c *Client) (*Answer, error) {
			v, err := c.Slot(context.Background(), "argpolicy")
			return ans(v, err)
		},
			"GET", "/admin/v1/slots/argpolicy", "", ""},
		{"install slot", func(c *Client) (*Answer, error) {
			v, err := c.InstallSlot(context.Background(), "argpolicy", "ab", module, `{"a":1}`, 0)
			return ans(v, err)
		}, "PUT", "/admin/v1/slots/argpolicy?sha256=ab", string(module), `{"a":1}`},
		{"install slot and wait", func(c *Client) (*Answer, error) {
			v, err := c.InstallSlot(context.Background(), "argpolicy", "ab", module, "", time.Minute)
			return ans(v, err)
		}, "PUT", "/admin/v1/slots/argpolicy?sha256=ab&wait=1m0s", string(module), ""},
		{"rollback", func(c *Client) (*Answer, error) {
			v, err := c.RollbackSlot(context.Background(), "argpolicy", 0, 0)
			return ans(v, err)
		}, "POST", "/admin/v1/slots/argpolicy/rollback", "", ""},
		{"rollback to 2 and wait", func(c *Client) (*Answer, error) {
			v, err := c.RollbackSlot(context.Background(), "argpolicy", 2, 30*time.Second)
			return ans(v, err)
		}, "POST", "/admin/v1/slots/argpolicy/rollback?to=2&wait=30s", "", ""},
		{"instances", func(c *Client) (*Answer, error) { v, err := c.Instances(context.Background()); return ans(v, err) },
			"GET", "/admin/v1/instances", "", ""},
		{"plugins", func(c *Client) (*Answer, error) {
			v, err := c.Plugins(context.Background(), "acme")
			return ans(v, err)
		},
			"GET", "/v1/plugins?tenant=acme", "", ""},
		{"plugin", func(c *Client) (*Answer, error) {
			v, err := c.Plugin(context.Background(), "g", "")
			return ans(v, err)
		},
			"GET", "/v1/plugins/g", "", ""},
		{"install plugin", func(c *Client) (*Answer, error) {
			v, err := c.InstallPlugin(context.Background(), "g", "ab", module, "acme")
			return ans(v, err)
		}, "PUT", "/v1/plugins/g?sha256=ab&tenant=acme", string(module), ""},
		{"delete plugin", func(c *Client) (*Answer, error) {
			v, err := c.DeletePlugin(context.Background(), "g", "")
			return ans(v, err)
		},
			"DELETE", "/v1/plugins/g", "", ""},
		{"skills", func(c *Client) (*Answer, error) { v, err := c.Skills(context.Background(), ""); return ans(v, err) },
			"GET", "/v1/skills", "", ""},
		{"skill", func(c *Client) (*Answer, error) {
			v, err := c.Skill(context.Background(), "k", "acme")
			return ans(v, err)
		},
			"GET", "/v1/skills/k?tenant=acme", "", ""},
		{"put skill", func(c *Client) (*Answer, error) {
			v, err := c.PutSkill(context.Background(), "k", SkillUpload{SkillName: "n", SkillManual: "m", SkillContract: "c"}, "")
			return ans(v, err)
		}, "PUT", "/v1/skills/k", `{"skill_name":"n","skill_manual":"m","skill_contract":"c","toolNames":[]}`, ""},
		{"delete skill", func(c *Client) (*Answer, error) {
			v, err := c.DeleteSkill(context.Background(), "k", "")
			return ans(v, err)
		},
			"DELETE", "/v1/skills/k", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var method, uri, body, cfg string
			c := newTest(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				method, uri, body, cfg = r.Method, r.URL.RequestURI(), string(b), r.Header.Get("Warden-Config")
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(`{}` + "\n"))
			}, "")
			a, err := tc.call(c)
			if err != nil {
				t.Fatal(err)
			}
			if method != tc.method || uri != tc.uri || body != tc.body || cfg != tc.cfg {
				t.Fatalf("sent %s %s %q (config %q), want %s %s %q (config %q)", method, uri, body, cfg, tc.method, tc.uri, tc.body, tc.cfg)
			}
			if a.Status != http.StatusCreated || string(a.Raw) != "{}\n" {
				t.Fatalf("answer %d %q", a.Status, a.Raw)
			}
		})
	}
}

func ans[T interface{ Of() *Answer }](v T, err error) (*Answer, error) {
	if err != nil {
		return nil, err
	}
	return v.Of(), nil
}

// An answer that does not decode is kept beside the error, for a caller
// that prints answers as they are.
func TestUndecodedAnswer(t *testing.T) {
	t.Parallel()
	c := newTest(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`[]`)) }, "")
	s, err := c.InstallSlot(context.Background(), "x", "ab", nil, "", 0)
	if err == nil || err.Error() != "the answer to the install is not what the client reads: json: cannot unmarshal array into Go value of type client.Slot" {
		t.Fatalf("err = %v", err)
	}
	if s == nil || string(s.Raw) != "[]" {
		t.Fatalf("result = %+v", s)
	}
}

// The event stream is asked for as server-sent events, after the last
// event seen.
func TestEvents(t *testing.T) {
	t.Parallel()
	var uri, accept string
	c := newTest(t, func(w http.ResponseWriter, r *http.Request) {
		uri, accept = r.URL.RequestURI(), r.Header.Get("Accept")
		w.Write([]byte("data: {}\n\n"))
	}, "")
	body, err := c.Events(context.Background(), "s1", 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(body)
	body.Close()
	if uri != "/v1/sessions/s1/events?after=7" || accept != "text/event-stream" || string(b) != "data: {}\n\n" {
		t.Fatalf("sent %s (Accept %q), read %q", uri, accept, b)
	}
}
