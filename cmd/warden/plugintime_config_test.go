package main

import (
	"io"
	"testing"
	"time"
)

// TestConfigPluginTime: the tenant-plugin-* keys, their defaults, their
// sources and their errors.
func TestConfigPluginTime(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	c, err := loadServeConfig(f.with(), envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.PluginTime != time.Second || c.PluginBurst != 2*time.Second {
		t.Fatalf("defaults: %v, %v; want 1s, 2s", c.PluginTime, c.PluginBurst)
	}
	file := f.file(t, "plugintime.yaml", "tenant-plugin-time: 250ms\n")
	c, err = loadServeConfig(f.with("--config", file), envOf(map[string]string{"WARDEN_TENANT_PLUGIN_BURST": "500ms"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.PluginTime != 250*time.Millisecond || c.PluginBurst != 500*time.Millisecond {
		t.Fatalf("got %v, %v; want 250ms, 500ms", c.PluginTime, c.PluginBurst)
	}
	if c, err = loadServeConfig(f.with("--tenant-plugin-time", "0s", "--tenant-plugin-burst", "0s"), envOf(nil), io.Discard); err != nil || c.PluginTime != 0 {
		t.Fatalf("the budget off: %v %v", err, c.PluginTime)
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"time not a duration", []string{"--tenant-plugin-time", "1"}, nil, `--tenant-plugin-time (WARDEN_TENANT_PLUGIN_TIME): flag --tenant-plugin-time: "1" is not a duration`},
		{"time negative", nil, map[string]string{"WARDEN_TENANT_PLUGIN_TIME": "-1s"}, `--tenant-plugin-time (WARDEN_TENANT_PLUGIN_TIME): must not be negative (0 turns the limit off)`},
		{"burst negative", []string{"--tenant-plugin-burst", "-5ms"}, nil, `--tenant-plugin-burst (WARDEN_TENANT_PLUGIN_BURST): must not be negative (0 turns the limit off)`},
		{"burst zero with a time", []string{"--tenant-plugin-burst", "0s"}, nil,
			`--tenant-plugin-burst (WARDEN_TENANT_PLUGIN_BURST): must be more than 0 with a tenant-plugin-time (0 turns the plugin time budget off: set tenant-plugin-time 0)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadServeConfig(f.with(tt.args...), envOf(tt.env), io.Discard)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}
