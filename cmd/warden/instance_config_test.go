package main

import (
	"io"
	"testing"
	"time"
)

// TestConfigPluginInstances: the plugin instance keys, their defaults,
// their sources, the sizes they read and their errors.
func TestConfigPluginInstances(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	c, err := loadServeConfig(f.with(), envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if k := c.instances; k.Idle != 2*time.Minute || k.Max != 256 || k.bytes != defaultInstanceBytes() || k.bytes < 128<<20 || k.bytes > 384<<20 {
		t.Fatalf("defaults: %+v", k)
	}
	file := f.file(t, "instances.yaml", "plugin-max-instances: 40\nplugin-max-instance-bytes: 64MiB\n")
	c, err = loadServeConfig(f.with("--config", file, "--plugin-max-instance-bytes", "1GiB"), envOf(map[string]string{"WARDEN_PLUGIN_INSTANCE_IDLE": "30s"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if k := c.instances; k.Idle != 30*time.Second || k.Max != 40 || k.bytes != 1<<30 {
		t.Fatalf("got %+v; want 30s, 40, 1GiB", k)
	}
	for _, tt := range []struct {
		raw  string
		want int64
	}{{"0", 0}, {"4096", 4096}, {"3KiB", 3 << 10}, {"200MiB", 200 << 20}, {"2GiB", 2 << 30}} {
		if c, err = loadServeConfig(f.with("--plugin-max-instance-bytes", tt.raw), envOf(nil), io.Discard); err != nil || c.instances.bytes != tt.want {
			t.Errorf("%s: %v, %d; want %d", tt.raw, err, c.instances.bytes, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"idle not a duration", []string{"--plugin-instance-idle", "5"}, nil, `--plugin-instance-idle (WARDEN_PLUGIN_INSTANCE_IDLE): flag --plugin-instance-idle: "5" is not a duration`},
		{"idle negative", nil, map[string]string{"WARDEN_PLUGIN_INSTANCE_IDLE": "-1s"}, `--plugin-instance-idle (WARDEN_PLUGIN_INSTANCE_IDLE): must not be negative (0 keeps idle instances)`},
		{"count negative", []string{"--plugin-max-instances", "-1"}, nil, `--plugin-max-instances (WARDEN_PLUGIN_MAX_INSTANCES): must not be negative (0 turns the count off)`},
		{"bytes unit", []string{"--plugin-max-instance-bytes", "512MB"}, nil, `--plugin-max-instance-bytes (WARDEN_PLUGIN_MAX_INSTANCE_BYTES): "512MB" is not a size: bytes, or a whole number of KiB, MiB or GiB (0 turns the bound off)`},
		{"bytes negative", []string{"--plugin-max-instance-bytes", "-1MiB"}, nil, `--plugin-max-instance-bytes (WARDEN_PLUGIN_MAX_INSTANCE_BYTES): "-1MiB" is not a size: bytes, or a whole number of KiB, MiB or GiB (0 turns the bound off)`},
		{"bytes too large", []string{"--plugin-max-instance-bytes", "99999999999GiB"}, nil, `--plugin-max-instance-bytes (WARDEN_PLUGIN_MAX_INSTANCE_BYTES): "99999999999GiB" is too large`},
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
