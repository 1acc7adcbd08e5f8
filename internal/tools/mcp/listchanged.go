package mcp

import (
	"context"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/tools"
)

// listDebounce bounds how often a Client lists the tools again after
// notifications/tools/list_changed: the first is followed at once, and the
// ones that come within listDebounce of a listing are covered by one more.
// A server that adds ten tools in a row costs two tools/list, and one that
// sends the notification in a loop at most one every listDebounce.
const listDebounce = 200 * time.Millisecond

// listWait bounds how long Tools waits for a listing that a
// list_changed made due.
const listWait = 5 * time.Second

// toolsChanged answers notifications/tools/list_changed: a listing is due,
// and Tools waits for it. It never blocks the session's reader.
func (c *Client) toolsChanged(context.Context, *sdk.ToolListChangedRequest) {
	c.toolsMu.Lock()
	if c.due == nil {
		c.due = make(chan struct{})
	}
	c.toolsMu.Unlock()
	select {
	case c.stale <- struct{}{}:
	default: // one is pending already
	}
}

// refresher lists the tools again after list_changed, one listing at a
// time and at most one per listDebounce, until the Client is closed.
func (c *Client) refresher() {
	for {
		select {
		case <-c.done:
			return
		case <-c.stale:
		}
		c.toolsMu.Lock()
		due := c.due
		c.due = nil
		c.toolsMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ConnectTimeout)
		ts, err := c.ListTools(ctx)
		cancel()
		if due != nil {
			close(due)
		}
		if err != nil {
			c.log.Warn("tools/mcp: listing the tools after list_changed failed; the last list stays", "server", c.name, "err", err)
		} else {
			c.log.Info("tools/mcp: tool list changed", "server", c.name, "tools", len(ts))
		}
		select {
		case <-c.done:
			return
		case <-time.After(listDebounce):
		}
	}
}

// remember keeps a listing as the Client's current tools.
func (c *Client) remember(ts []tools.Tool) {
	c.toolsMu.Lock()
	c.listed = slices.Clone(ts)
	c.toolsMu.Unlock()
}

// Tools returns the server's tools as last listed: at every ListTools, and
// after each notifications/tools/list_changed (tools.Live). When a
// list_changed came and its listing is under way, Tools waits for it (at
// most listWait), so that a tool added during a call is there for the
// round that follows the call. No request is sent here.
func (c *Client) Tools() []tools.Tool {
	c.toolsMu.Lock()
	due := c.due
	c.toolsMu.Unlock()
	if due != nil {
		t := time.NewTimer(listWait)
		select {
		case <-due:
		case <-t.C:
		case <-c.done:
		}
		t.Stop()
	}
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	return slices.Clone(c.listed)
}
