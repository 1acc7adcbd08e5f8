// Package telemetry is how operators watch Warden: Prometheus metrics,
// OpenTelemetry traces and JSON logs.
//
// Metrics live in a registry of their own (never the global one), served by
// Metrics.Handler in the exposition format:
//
//   - warden_plugin_*: per plugin and slot generation, from the host's own
//     counters (host.Stats) read at each scrape through
//     MetricsOptions.Plugins: calls by outcome (pass, success, failed,
//     rejected, deferred, trap, timeout, memory_limit, contract_violation,
//     output_too_large, input_too_large, unavailable), a latency histogram
//     over host.LatencyBuckets, traps and timeouts, fail-open and shadow
//     verdicts, pool instances (live, idle, created, closed), calls in
//     flight, the memory limit in pages and the largest instance memory,
//     and an info series naming the module's ref and digest. A retired
//     generation's series disappear with it.
//   - warden_tenant_plugin_time_refused_total: per tenant, the plugin calls
//     not started because the tenant had spent its plugin time, read at
//     each scrape through MetricsOptions.PluginTimeRefused.
//   - warden_plugin_compile_worker_*: the modules the host had never
//     compiled that its compile worker compiled, by result (compiled,
//     refused: the module does not compile, failed: the worker crashed or
//     timed out), the worker's seconds, and the compiles done in the
//     serving process because the worker could not be started, read at each
//     scrape through MetricsOptions.Compiles.
//   - warden_loop_*: per tenant, from a session's trace events through the
//     loop.Sink that Metrics.Sink returns: tool calls by tool, outcome and
//     code name, no-progress turns (stalls), suspensions by kind, nodes and
//     tasks ended by status. No session, task or node id is a label, and a
//     tenant's tool names are capped (MetricsOptions.MaxTools).
//   - warden_http_*: requests by route pattern and status code, their
//     latency, and requests in flight, through Metrics.Middleware.
//   - warden_build_info: the binary's version, revision and Go version as
//     labels (always 1).
//
// Handler checks no key: the metrics name every tenant, so `warden serve`
// mounts it behind server.Operator (an admin or metrics key) on the API's
// address, or without a key on an address of its own (metrics-addr).
//
// Traces: warden serve's requests are server spans named by route pattern
// that continue an incoming traceparent; under them the loop, the host, the
// model adapter and the MCP client start spans on the global OpenTelemetry
// provider (warden.task → warden.node → chat MODEL and warden.tool_call →
// tools/call TOOL and warden.plugin_call), every one naming its tenant,
// session and task (internal/tracing). The provider is a no-op until
// SetupTracing installs one that writes spans to a file as JSON or sends
// them over OTLP/HTTP; it also installs the W3C propagators.
//
// Logs: NewLogger builds a JSON slog.Logger at a named level whose records
// carry trace_id and span_id when logged in a traced context; LogOTel makes
// OpenTelemetry's own errors records of it; LogSink is a loop.Sink logging
// each trace event of a session as one record.
package telemetry
