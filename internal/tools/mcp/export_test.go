package mcp

// pid is the current child's process id, or 0.
func (c *Client) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil || c.sess.cmd == nil || c.sess.cmd.Process == nil {
		return 0
	}
	return c.sess.cmd.Process.Pid
}

// sessionDone is closed when the current session ended on its own.
func (c *Client) SessionDone() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.dead
}
