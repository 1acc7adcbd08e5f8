// Package mcp calls business tools on an MCP server through the official Go
// SDK, over stdio (a child process) or streamable HTTP (a URL).
//
// A Client satisfies tools.Provider. Its CallTool keeps the three kinds of
// outcome apart, because the invoker treats them differently
// (CONTRACT_SPEC §14.4):
//
//   - the tool ran and answered: a chain.Response, its Content taken from
//     structuredContent, else from the text content when that parses as
//     JSON, else the text as a JSON string; a result with an image, audio,
//     resource or resource link part instead has Content
//     {"content":[every part in MCP's shape],"text":…,"structuredContent":…};
//   - the tool ran and reported its own failure (MCP isError): a
//     chain.Response with IsError and the tool's Text — not an error;
//   - the call failed: an error wrapping one of the chain sentinels —
//     chain.ErrAuth when an HTTP server refused the credentials (401 or
//     403; its status, words and challenge, bounded, are in the error and
//     the log), chain.ErrUnreachable when nothing could have reached the tool
//     (connection refused, process not started), chain.ErrIO when the
//     connection broke while the call was under way, chain.ErrTimeout on the
//     context's deadline, chain.ErrInvalidParams for JSON-RPC -32602 and
//     chain.ErrRPC for any other protocol error.
//
// Every JSON value in Content is the server's, byte for byte: the SDK
// decodes results into float64 and maps, so the transports keep each call's
// raw result (matched by JSON-RPC id) and Content is cut from it; numbers
// keep every digit and objects their key order.
//
// The server's own requests are answered (Config): roots/list with the
// configured roots, elicitation declined unless a handler is set, sampling
// refused unless a handler is set. Progress notifications of a call reach
// the invoker (chain.ReportProgress), which moves the call's deadline. Tools
// that require task augmentation are not listed. A stdio child gets only an
// allowlisted environment, and a line on its stdout that is not a JSON-RPC
// 2.0 message (a banner, a structured logger's JSON) or is longer than 16
// MiB is logged, counted and skipped. An HTTP server's headers and token go
// to the configured URL's origin only; a redirect elsewhere is refused when
// they are set. Servers offers several servers as one provider.
//
// A session found dead before a call is reconnected once (a new child
// process, or a new HTTP session); a call whose connection broke while it
// was under way is never re-sent, since a write may have been applied.
package mcp
