package config

import (
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
