package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const goodHash = "sha256:0000000000000000000000000000000000000000000000000000000000000001"

func TestAuthTokensFromYAMLAndEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(path, []byte("auth:\n  tokens:\n    - {name: ops, role: operator, hash: "+goodHash+"}\nhttp:\n  inbox-allow: [10.1.0.0/16, 192.0.2.7, token:ops]\n  admin-addr: 127.0.0.1:9090\n"), 0o644)
	c, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Auth.Tokens) != 1 || c.Auth.Tokens[0].Role != "operator" || c.HTTP.AdminAddr != "127.0.0.1:9090" {
		t.Fatalf("loaded: %+v", c.Auth)
	}
	r := c.InboxRule()
	if len(r.Networks) != 2 || len(r.Tokens) != 1 || r.Tokens[0] != "ops" || r.Networks[1].Bits() != 32 {
		t.Fatalf("inbox rule: %+v", r)
	}
	c, err = Load("", []string{"MSGX_AUTH_TOKENS=a:viewer:" + goodHash + ",b:admin:" + goodHash})
	if err != nil || len(c.Auth.Tokens) != 2 || c.Auth.Tokens[1].Name != "b" || c.Auth.Tokens[1].Hash != goodHash {
		t.Fatalf("from the environment: %+v %v", c.Auth.Tokens, err)
	}
}

func TestAuthMistakesNameTheirKey(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{"MSGX_AUTH_TOKENS=a:root:" + goodHash, "auth.tokens[0].role"},
		{"MSGX_AUTH_TOKENS=a:viewer:s3cret-in-clear", "auth.tokens[0].hash"},
		{"MSGX_AUTH_TOKENS=a:viewer:" + goodHash + ",a:admin:" + goodHash, "auth.tokens[1].name: \"a\" is used twice"},
		{"MSGX_AUTH_TOKENS=a-b", "auth.tokens"},
		{"MSGX_HTTP_INBOX_ALLOW=10.0.0.0/33", "http.inbox-allow"},
		{"MSGX_HTTP_INBOX_ALLOW=token:nobody", `token "nobody" is not a name in auth.tokens`},
		{"MSGX_HTTP_ADMIN_ADDR=:8080", "http.admin-addr"},
	} {
		_, err := Load("", []string{c.env})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to name %q", c.env, err, c.want)
		}
	}
}

func TestRedactedConfigHidesEverySecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "msgx.yaml")
	os.WriteFile(path, []byte(`database: {driver: mysql, dsn: "msgx:DbPass1@tcp(db:3306)/aodb"}
auth:
  tokens: [{name: ops, role: operator, hash: `+goodHash+`}]
targets:
  KAFKA_FLOP: {sink: kafka, brokers: [k:9092], topic: t, sasl: {mechanism: PLAIN, username: u, password: SaslPass2}}
  REDIS_NOTIFY: {sink: redis, channel: c, password: RedisPass3}
  ES_FLIGHT: {sink: elasticsearch, index: i, addresses: ["https://es:EsPass4@es:9200"]}
  WEBHOOK_OPS: {sink: webhook, url: "https://u:HookPass5@h/x?token=HookTok6", secret: HmacKey7, copy-of: REDIS_NOTIFY}
  CHAT: {sink: webhook, url: "https://chat.example/hooks/ChatPath12/XYZ?code=ChatCode13#access_token=ChatFrag14", secret: k, copy-of: REDIS_NOTIFY}
  SHOWN: {sink: webhook, url: "https://shown.example/msgx/in?x=1&sig=ShownSig15#ShownFrag16", secret: k, copy-of: REDIS_NOTIFY, show-path: true}
  KAFKA_SCHD: {sink: kafka, brokers: ["u:KafkaPass17@k:9092", "k2:9092/KafkaPath18"], topic: t}
redis: {password: RedisPass8}
history: {elasticsearch: {url: "https://es:EsUrlPass9@es:9200/EsPath19,https://es2:9200?token=EsTok20", index: h, password: EsPass10}}
eureka: {service-url: "http://eu:EurekaPass11@eureka:8761/eureka/EurekaPath21"}
`), 0o644)
	c, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := yaml.Marshal(v)
	for _, s := range []string{"DbPass1", "SaslPass2", "RedisPass3", "EsPass4", "HookPass5", "HookTok6", "HmacKey7", "RedisPass8", "EsUrlPass9", "EsPass10", "EurekaPass11", goodHash,
		"ChatPath12", "ChatCode13", "ChatFrag14", "ShownSig15", "ShownFrag16", "KafkaPass17", "KafkaPath18", "EsPath19", "EsTok20", "EurekaPath21"} {
		if strings.Contains(string(b), s) {
			t.Errorf("the config view shows %q:\n%s", s, b)
		}
	}
	for _, want := range []string{"msgx:xxxxx@tcp(db:3306)/aodb", "name: ops", "https://chat.example/xxxxx", "https://shown.example/msgx/in?x=1&sig=xxxxx#xxxxx",
		"u:xxxxx@k:9092", "k2:9092/xxxxx", "https://es:xxxxx@es:9200/xxxxx,https://es2:9200/xxxxx", "http://eu:xxxxx@eureka:8761/xxxxx"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the config view does not show %q:\n%s", want, b)
		}
	}
	if !strings.Contains(string(b), "msgx:xxxxx@tcp(db:3306)/aodb") || !strings.Contains(string(b), "name: ops") {
		t.Errorf("the config view lost what is not secret:\n%s", b)
	}
}
