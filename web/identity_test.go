package web

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestSessions(t *testing.T) {
	s := newSessions()
	key, err := s.add(identity{User: "alice", Groups: []string{"dev"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.get(key); !ok || v.id.User != "alice" {
		t.Fatalf("get = %+v %v", v, ok)
	}
	if _, ok := s.get(key + "x"); ok {
		t.Fatal("an unknown session id was accepted")
	}
	s.m[key] = session{id: identity{User: "alice"}, expires: time.Now().Add(-time.Second)}
	if _, ok := s.get(key); ok {
		t.Fatal("an expired session was accepted")
	}
	key2, _ := s.add(identity{User: "bob"}, "")
	s.remove(key2)
	if _, ok := s.get(key2); ok {
		t.Fatal("a removed session was accepted")
	}
}

func TestRestConfigForImpersonates(t *testing.T) {
	d := &Dashboard{cfg: Config{RESTConfig: &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "dashboard"}}}
	if cfg := d.restConfigFor(nil); cfg.Impersonate.UserName != "" || cfg.BearerToken != "dashboard" {
		t.Fatalf("the dashboard's own config: %+v", cfg.Impersonate)
	}
	cfg := d.restConfigFor(&identity{User: "alice", Groups: []string{"dev", "system:authenticated"}})
	if cfg.Impersonate.UserName != "alice" || len(cfg.Impersonate.Groups) != 2 || cfg.BearerToken != "dashboard" {
		t.Fatalf("impersonation: %+v", cfg.Impersonate)
	}
	if d.cfg.RESTConfig.Impersonate.UserName != "" {
		t.Fatal("the shared config was changed")
	}
}
