// Package ops holds the operator's files for Warden: a Grafana dashboard
// (grafana/warden.json) and Prometheus alert rules with their unit tests
// (prometheus/). Its test checks them with promtool against the metrics a
// real registry exports, and checks that every metric they name is one
// Warden exports. See README.md.
package ops
