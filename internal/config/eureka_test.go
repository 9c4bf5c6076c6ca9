package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestEurekaConfig(t *testing.T) {
	c, err := Load("", []string{"MSGX_EUREKA_ENABLED=true", "MSGX_EUREKA_SERVICE_URL= http://e1:8761/eureka , http://e2:8761/eureka"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.EurekaURLs(); len(got) != 2 || got[1] != "http://e2:8761/eureka" {
		t.Errorf("urls %v", got)
	}
	if c.Eureka.Heartbeat != 30*time.Second || c.RegistryName() != "msgexchangeapi" {
		t.Errorf("heartbeat %s, name %s", c.Eureka.Heartbeat, c.RegistryName())
	}
	c, err = Load("", []string{"MSGX_MODE=shadow", "MSGX_SERVICE_NAME=msgx"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Shadow() || c.RegistryName() != "msgx-shadow" {
		t.Errorf("shadow %v, name %s", c.Shadow(), c.RegistryName())
	}
	for env, key := range map[string]string{
		"MSGX_EUREKA_ENABLED=true":          "eureka.service-url",
		"MSGX_EUREKA_SERVICE_URL=eureka:87": "eureka.service-url",
		"MSGX_EUREKA_HEARTBEAT=0s":          "eureka.heartbeat",
		"MSGX_EUREKA_PORT=70000":            "eureka.port",
	} {
		if _, err := Load("", []string{env}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error naming %s", env, err, key)
		}
	}
}

func TestShadowKeepsOffTheLegacyChannel(t *testing.T) {
	dir := t.TempDir()
	write := func(channel string) string {
		p := dir + "/msgx.yaml"
		y := "mode: shadow\ntargets:\n  LEGACY_FLOP: {sink: redis, format: legacy, copy-of: REDIS_NOTIFY" + channel + "}\n"
		if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, ch := range []string{"", ", channel: FLOP"} {
		if _, err := Load(write(ch), nil); err == nil || !strings.Contains(err.Error(), "targets.LEGACY_FLOP.channel") {
			t.Errorf("%q: %v, want an error naming targets.LEGACY_FLOP.channel", ch, err)
		}
	}
	if _, err := Load(write(", channel: FLOP-msgx"), nil); err != nil {
		t.Error(err)
	}
	// Whatever its format, a redis target of a shadow stays off the legacy's channel.
	p := dir + "/other.yaml"
	if err := os.WriteFile(p, []byte("mode: shadow\ntargets:\n  NOTIFY2: {sink: redis, channel: ' FLOP', copy-of: REDIS_NOTIFY}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, nil); err == nil || !strings.Contains(err.Error(), "targets.NOTIFY2.channel") {
		t.Errorf("a json target on channel FLOP: %v, want an error naming targets.NOTIFY2.channel", err)
	}
}
